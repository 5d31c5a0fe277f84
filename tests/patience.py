"""How long a test waits for something that must happen.

A wait ends early as soon as the thing happens, so a generous bound costs nothing on a
passing run; only the wrong behaviour (a stream never closed, a loss never reported)
waits it out.  It is far above what a busy machine takes (issue 26: the suite must hold
with four busy loops on two cores), and it is one number so no test picks a tighter one.
"""

NEVER_S = 30.0
