"""Webhooks: signed deliveries of job events (`delivery`) from a durable outbox in the database (`outbox`)."""
