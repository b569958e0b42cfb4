"""The interactive workbench: a Textual front end over the same core the CLI drives."""
