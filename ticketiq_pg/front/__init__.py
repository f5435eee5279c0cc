"""The HTTP front (needs the ``http`` extra): routes, credentials, embedding (docs/front.md)."""
