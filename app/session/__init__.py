"""The Session (the one owner a front end talks to) and its listening half."""
