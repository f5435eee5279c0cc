"""ticketiq_pg: crash-resume core for AI agent runs (PostgreSQL functions + thin async driver)."""
