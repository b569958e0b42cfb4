"""One module per mode, plus the dialogs they open."""
