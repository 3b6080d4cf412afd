"""benchmarks.loop_turn: both servers answer every frame, and a round prints the turn as the difference."""

from benchmarks import loop_turn


def test_both_servers_answer_every_round_trip_and_the_turn_is_their_difference(capsys):
    result = loop_turn.main(["--round-trips", "200", "--rounds", "2"])
    assert len(result["rounds"]) == 2
    for r in result["rounds"]:
        assert r["task_p50_us"] > 0 and r["callback_p50_us"] > 0
        assert r["turn_us"] == round(r["task_p50_us"] - r["callback_p50_us"], 1)
    assert result["turn_us_min"] <= result["turn_us_max"]
    assert "one loop turn:" in capsys.readouterr().out
