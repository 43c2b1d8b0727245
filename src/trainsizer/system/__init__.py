"""The rest of the server: host, storage, network, power, racks, and the fit at a site."""
