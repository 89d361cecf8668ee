"""Plans: several tool calls validated whole and run as one durable call (`schemas.tools.plans`)."""
