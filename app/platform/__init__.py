"""The machine the app runs on: CPU cores, bundled models, the keychain, redaction."""
