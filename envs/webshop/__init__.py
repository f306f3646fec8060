"""WebShop offline: the shopping-agent env (``webshop-v0``), its page protocol, reward and search."""
