"""The headless face: a typer app, one module per noun."""
