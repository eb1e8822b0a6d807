"""Text that leaves the store: secrets redacted out of it (`redact.py`) and untrusted text made
safe for where it is shown, one sanitizer with a policy per destination (`sanitize.py`)."""
