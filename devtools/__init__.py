"""Tools for testing and measuring the app, kept out of the product.

``devtools.fake_server`` (the OpenAI-compatible test server), ``devtools.bench`` (the
benchmarks behind ``interview-copilot bench``) and ``devtools.scripted`` (the scripted
interview the screenshot and paint-latency scripts drive the window with) live in a
source checkout beside ``app/``.  They depend on ``app``; ``app`` never imports them,
except :mod:`app.frontends.checkout`, which finds them for ``interview-copilot bench``.  The wheel
(``[tool.setuptools.packages.find]`` lists ``app*`` only) and the PyInstaller bundle
(``excludes`` in ``packaging/interview-copilot.spec``) leave them out.
"""
