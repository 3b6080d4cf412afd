"""The broker's network edge beyond framing: listeners with security protocols, TLS, SASL sessions."""
