// Runs a release's own kafka-dump-log (DumpLogSegments' main, the class kafka-dump-log.sh runs) once per
// job, all in one JVM: starting a JVM per file costs more than the dumps on a small machine. For
// tests/data/make_kafka4_corpus.py: java -cp 'lib/*' DumpLogBatch.java MAIN_CLASS JOBS_FILE, run from the
// corpus root. A job is a line "OUTPUT<TAB>ARG<TAB>ARG...": the tool's stdout goes to OUTPUT, its stderr
// (when not empty) to OUTPUT.stderr, and "1" to OUTPUT.rc when it throws (the script's exit status).
import java.io.*;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.util.*;

public class DumpLogBatch {
    public static void main(String[] args) throws Exception {
        Method main = Class.forName(args[0]).getMethod("main", String[].class);
        PrintStream realOut = System.out;
        PrintStream realErr = System.err;
        int jobs = 0;
        for (String line : Files.readAllLines(Paths.get(args[1]), StandardCharsets.UTF_8)) {
            if (line.isEmpty()) continue;
            String[] parts = line.split("\t");
            Path output = Paths.get(parts[0]);
            Files.createDirectories(output.toAbsolutePath().getParent());
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            int rc = 0;
            try (PrintStream out = new PrintStream(new FileOutputStream(output.toFile()), false, StandardCharsets.UTF_8);
                 PrintStream errStream = new PrintStream(err, true, StandardCharsets.UTF_8)) {
                System.setOut(out);
                System.setErr(errStream);
                scalaConsole(out, errStream);
                try {
                    main.invoke(null, (Object) Arrays.copyOfRange(parts, 1, parts.length));
                } catch (InvocationTargetException e) {
                    rc = 1;
                    e.getCause().printStackTrace(errStream);
                } finally {
                    out.flush();
                    System.setOut(realOut);
                    System.setErr(realErr);
                    scalaConsole(realOut, realErr);
                }
            }
            if (err.size() > 0) Files.write(Paths.get(parts[0] + ".stderr"), err.toByteArray());
            if (rc != 0) Files.write(Paths.get(parts[0] + ".rc"), "1\n".getBytes(StandardCharsets.UTF_8));
            jobs++;
        }
        realOut.println("dumped " + jobs);
    }

    // Kafka 3.x's tool is Scala: its println writes to scala.Console's stream, which System.setOut does not
    // move. Console.setOutDirect/setErrDirect (public in the bytecode) do; 4.x's Java tool has no Scala.
    static void scalaConsole(PrintStream out, PrintStream err) throws Exception {
        Class<?> console;
        try {
            console = Class.forName("scala.Console$");
        } catch (ClassNotFoundException e) {
            return;
        }
        Object module = console.getField("MODULE$").get(null);
        console.getMethod("setOutDirect", PrintStream.class).invoke(module, out);
        console.getMethod("setErrDirect", PrintStream.class).invoke(module, err);
    }
}
