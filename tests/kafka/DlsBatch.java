import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Runs Kafka's DumpLogSegments once per file, all in one JVM (a JVM costs half a second,
 * the fixtures hold thousands of files). Reads the files from stdin, one per line; the
 * arguments are DumpLogSegments' options. For each file it calls DumpLogSegments.main as
 * `kafka-dump-log.sh OPTIONS --files FILE` would, with System.out and System.err captured,
 * and writes one frame to the real stdout:
 *
 *   "@@dls <stdout bytes> <stderr bytes> <0|1: ended by an exception>\n" stdout stderr
 *
 * An exception is written to the captured stderr the way the JVM reports an uncaught one.
 */
public class DlsBatch {
    public static void main(String[] args) throws Exception {
        PrintStream realOut = System.out;
        OutputStream sink = new java.io.FileOutputStream(java.io.FileDescriptor.out);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String file;
        while ((file = in.readLine()) != null) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            PrintStream o = new PrintStream(out, true, StandardCharsets.UTF_8);
            PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8);
            System.setOut(o);
            System.setErr(e);
            List<String> argv = new ArrayList<>(List.of(args));
            argv.add("--files");
            argv.add(file);
            int crashed = 0;
            try {
                org.apache.kafka.tools.DumpLogSegments.main(argv.toArray(new String[0]));
            } catch (Throwable t) {
                crashed = 1;
                e.println("Exception in thread \"main\" " + t);
            }
            o.flush();
            e.flush();
            byte[] ob = out.toByteArray();
            byte[] eb = err.toByteArray();
            sink.write(("@@dls " + ob.length + " " + eb.length + " " + crashed + "\n").getBytes(StandardCharsets.UTF_8));
            sink.write(ob);
            sink.write(eb);
        }
        sink.flush();
        System.setOut(realOut);
    }
}
