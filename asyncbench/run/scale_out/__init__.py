"""A scaled-out run (``--processes K``, ``--cluster``): the coordinator and the client processes hosting the workers, their capacity probes, and their batch lines carried back live."""
