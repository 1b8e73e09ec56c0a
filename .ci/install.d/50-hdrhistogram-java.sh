# HdrHistogram Java 2.1.11 (Debian's libhdrhistogram-java: /usr/share/java/hdrhistogram.jar)
# and a Java runtime, for picollo-alloc's differential tests against an implementation nobody
# here wrote (tests/java_differential.rs: every total 1..100,000 at the standard ranks,
# .hlog both ways through HistogramLogProcessor and HistogramLogWriter). The headless JRE is
# enough: the test's Java side runs in source-file mode, with the JRE's own compiler module.
# The install takes about 30 s; the tests 15 to 30 s of the test step (a JVM start per test,
# 4.8 million getValueAtPercentile calls).
apt_install default-jre-headless libhdrhistogram-java
jar=/usr/share/java/hdrhistogram.jar
[ -f "$jar" ] || { echo "error: libhdrhistogram-java installed no $jar" >&2; dpkg -L libhdrhistogram-java >&2; return 1; }
