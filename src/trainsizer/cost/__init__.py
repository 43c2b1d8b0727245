"""Money: buy TCO, rent, break-even, rental quotes."""
