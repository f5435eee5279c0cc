"""Agent frameworks run durably on ticketiq-pg: :mod:`ticketiq_pg.integrations.pydantic_ai`
(extra ``pydantic-ai``)."""
