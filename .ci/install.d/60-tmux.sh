# tmux, for picollo-cli/tests/rings.rs `top_in_tmux`: `picollo top` on a real terminal (redrawn
# in place, `q` quits, the terminal is given back). The test fails under CI without it. About
# 5 s.
apt_install tmux
