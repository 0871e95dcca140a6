"""The transports: legacy HTTP+SSE, Streamable HTTP and stdio, each one module, plus the pieces they share."""
