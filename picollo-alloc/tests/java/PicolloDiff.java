// The HdrHistogram Java side of picollo-alloc/tests/java_differential.rs, run with the jar that
// Debian's libhdrhistogram-java installs, in source-file mode (no javac needed):
//
//   java -cp /usr/share/java/hdrhistogram.jar PicolloDiff.java ranks RANKS FILE...
//     For each FILE (one value per line), records the values one at a time into
//     new Histogram(1, 2^30, 2) and, after each, calls getValueAtPercentile at each of the
//     comma-separated RANKS; writes FILE.java with a line "total rank-index value" each time a
//     rank's value changes (so every total is compared, in little text). One thread per file.
//
//   java -cp ... PicolloDiff.java writelog OUT.hlog RANKS FILE...
//     Writes an interval log with HistogramLogWriter: one interval per FILE, recorded into
//     new Histogram(1, 2^40, 3), the odd ones tagged "B"; prints, per interval,
//     "total max min v1 v2 ..." with getValueAtPercentile at RANKS.

import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramLogWriter;

import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

public class PicolloDiff {
    static long[] values(String file) throws Exception {
        return Files.readAllLines(Paths.get(file)).stream().mapToLong(Long::parseLong).toArray();
    }

    static double[] ranks(String list) {
        return Arrays.stream(list.split(",")).mapToDouble(Double::parseDouble).toArray();
    }

    static void ranksOf(String file, double[] ranks) throws Exception {
        long[] values = values(file);
        Histogram h = new Histogram(1, 1L << 30, 2);
        long[] last = new long[ranks.length];
        Arrays.fill(last, -1);
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < values.length; i++) {
            h.recordValue(values[i]);
            for (int r = 0; r < ranks.length; r++) {
                long v = h.getValueAtPercentile(ranks[r]);
                if (v != last[r]) {
                    out.append(i + 1).append(' ').append(r).append(' ').append(v).append('\n');
                    last[r] = v;
                }
            }
        }
        Files.write(Paths.get(file + ".java"), out.toString().getBytes("UTF-8"));
    }

    public static void main(String[] args) throws Exception {
        if (args[0].equals("ranks")) {
            double[] ranks = ranks(args[1]);
            List<Thread> threads = new ArrayList<>();
            List<Exception> failures = new ArrayList<>();
            for (int f = 2; f < args.length; f++) {
                String file = args[f];
                Thread t = new Thread(() -> {
                    try {
                        ranksOf(file, ranks);
                    } catch (Exception e) {
                        synchronized (failures) {
                            failures.add(e);
                        }
                    }
                });
                t.start();
                threads.add(t);
            }
            for (Thread t : threads) {
                t.join();
            }
            if (!failures.isEmpty()) {
                throw failures.get(0);
            }
        } else if (args[0].equals("writelog")) {
            double[] ranks = ranks(args[2]);
            long start = 1_700_000_000_000L;
            try (PrintStream log = new PrintStream(new FileOutputStream(args[1]))) {
                HistogramLogWriter w = new HistogramLogWriter(log);
                w.outputLogFormatVersion();
                w.outputStartTime(start);
                w.setBaseTime(start);
                w.outputLegend();
                for (int f = 3; f < args.length; f++) {
                    Histogram h = new Histogram(1, 1L << 40, 3);
                    for (long v : values(args[f])) {
                        h.recordValue(v);
                    }
                    h.setStartTimeStamp(start + 1000L * (f - 3));
                    h.setEndTimeStamp(start + 1000L * (f - 2));
                    if ((f - 3) % 2 == 1) {
                        h.setTag("B");
                    }
                    w.outputIntervalHistogram(h);
                    StringBuilder line = new StringBuilder();
                    line.append(h.getTotalCount()).append(' ').append(h.getMaxValue()).append(' ')
                            .append(h.getMinValue());
                    for (double r : ranks) {
                        line.append(' ').append(h.getValueAtPercentile(r));
                    }
                    System.out.println(line);
                }
            }
        } else {
            throw new IllegalArgumentException("mode: ranks or writelog");
        }
    }
}
