"""`kafkascope up`: the local stack (local.py, `make demo`) or the monitoring half for a cluster you already run
(watch.py); children and Prometheus in procs.py, the command line in cli.py."""
