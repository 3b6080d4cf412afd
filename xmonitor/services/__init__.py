"""xmonitor's services: each owns one thread doing one periodic job and reports its health to the Recorder."""
