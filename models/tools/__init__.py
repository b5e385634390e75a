"""The scripts that make and measure specdec's models (models/README.md, models/tools/README.md):
run from the repository root as `python3 -m models.tools.NAME`."""
