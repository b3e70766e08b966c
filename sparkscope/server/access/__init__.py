"""Who may reach a server sparkscope starts: each user's token (users.py) and the cluster's web UIs (ui_guard.py)."""
