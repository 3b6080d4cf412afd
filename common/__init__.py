"""What more than one component needs, written once: clocks, wire primitives, HDR parameters, polling, /metrics."""
