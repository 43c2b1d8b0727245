"""``trainsizer probe comm``: the bandwidth collectives reach on this machine's links (``measure``, one process per
rank: ``worker``), its settings and result, and a link profile the estimate can read (``link_profile``)."""
