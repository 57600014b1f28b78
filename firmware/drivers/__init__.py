"""Device drivers used by the firmware (Ethos-U, UART)."""
