# picollo-tracing's benches compare against tracing-tracy, whose tracy-client-sys compiles
# Tracy's C++ client: it needs a C++ compiler.
apt_install g++
