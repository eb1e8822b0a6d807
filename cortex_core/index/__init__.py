"""The index passes: what `cortex index` runs, in order (`ingest.py` is the run): commits read
in worker processes, file versions for blame, the changes `git log -- FILE` shows, the structure
of HEAD and its resolution, memory items and their vectors, and the areas that cluster them."""
