"""The currencies prices, budgets and reports are stated in (prices.yaml holds a rate between them)."""

CURRENCIES = ("CNY", "USD")
