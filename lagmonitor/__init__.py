"""Consumer lag the way Burrow does it: pure rules, window storage, collector, HTTP API, history sink."""
