"""Slow suite: headless Chromium (Debian's chromium or chromium-headless-shell) screenshots of report.html and of
the Streamlit page, checked for rendered charts (chart colours present in the image)."""

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from common.polling import wait_for_port

pytestmark = pytest.mark.slow
BROWSER = shutil.which("chromium-headless-shell") or shutil.which("chromium") or (
    "/usr/lib/chromium/chromium-headless-shell" if Path("/usr/lib/chromium/chromium-headless-shell").exists() else None)
CHART_BLUE = (31, 119, 180)  # the first series colour in report.html; Streamlit's default palette also starts blue


def _shot(url: str, png: Path, budget_ms: int = 20000) -> None:
    subprocess.run([BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    f"--screenshot={png}", "--window-size=1300,2600", f"--virtual-time-budget={budget_ms}", url],
                   check=True, timeout=120, capture_output=True)


def _cdp_shot(url: str, png: Path, wait_s: float = 40) -> int:
    """Load `url` in headless Chromium over the DevTools protocol (Streamlit renders after its websocket
    connects, which --screenshot does not wait for); screenshot once Vega charts are drawn. Returns their count."""
    import base64
    import json
    import urllib.request

    from websockets.sync.client import connect

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    browser = subprocess.Popen([BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                                f"--remote-debugging-port={port}", "--remote-allow-origins=*",
                                "--window-size=1300,2600", "about:blank"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=2) as r:
                    pages = [t for t in json.load(r) if t["type"] == "page"]
                if pages:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError("chromium's DevTools endpoint did not come up")
            time.sleep(0.3)
        with connect(pages[0]["webSocketDebuggerUrl"], max_size=2**26) as ws:
            ids = iter(range(1, 10**6))

            def call(method, **params):
                i = next(ids)
                ws.send(json.dumps({"id": i, "method": method, "params": params}))
                while True:
                    msg = json.loads(ws.recv(timeout=60))
                    if msg.get("id") == i:
                        return msg.get("result", {})

            call("Emulation.setDeviceMetricsOverride", width=1300, height=2600, deviceScaleFactor=1, mobile=False)
            call("Page.navigate", url=url)
            charts, end = 0, time.monotonic() + wait_s
            while time.monotonic() < end:
                r = call("Runtime.evaluate", expression="document.querySelectorAll('.vega-embed canvas, "
                                                        ".vega-embed svg').length", returnByValue=True)
                charts = r.get("result", {}).get("value", 0) or 0
                if charts >= 3:
                    time.sleep(3)  # let the remaining charts draw
                    break
                time.sleep(1)
            shot = call("Page.captureScreenshot", format="png")
            png.write_bytes(base64.b64decode(shot["data"]))
            return charts
    finally:
        browser.terminate()
        browser.wait(20)


def _colourful_pixels(png: Path) -> int:
    from PIL import Image

    img = Image.open(png).convert("RGB")
    return sum(1 for r, g, b in img.get_flattened_data() if max(r, g, b) - min(r, g, b) > 60)


@pytest.mark.skipif(BROWSER is None, reason="no headless chromium (apt-get install chromium-headless-shell)")
def test_report_html_screenshot(report_dir, tmp_path):
    png = tmp_path / "report.png"
    _shot((report_dir / "report.html").as_uri(), png, 2000)
    assert _colourful_pixels(png) > 500  # chart lines and alert bars, not just black text on white


@pytest.mark.skipif(BROWSER is None, reason="no headless chromium (apt-get install chromium-headless-shell)")
def test_streamlit_page_screenshot(report_dir, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "kafkascope", "page", "--report", str(report_dir), "--port",
                             str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=dict(os.environ, STREAMLIT_BROWSER_GATHER_USAGE_STATS="false"))
    try:
        wait_for_port("127.0.0.1", port, None, 60, 0.5)
        png = tmp_path / "page.png"
        charts = _cdp_shot(f"http://127.0.0.1:{port}/", png)
        shutil.copy(png, report_dir / "page.png")
        assert charts >= 3
        assert _colourful_pixels(png) > 500
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(20)
