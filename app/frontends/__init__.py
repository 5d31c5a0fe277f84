"""Front ends: the command line, doctor, the self-test, About, their shared checks."""
