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
 * arguments are DumpLogSegments' options. A line may hold more options before its file,
 * tab-separated (many option sets in one JVM). For each file it calls DumpLogSegments.main as
 * `kafka-dump-log.sh OPTIONS --files FILE` would, with System.out and System.err captured,
 * and writes one frame to the real stdout:
 *
 *   "@@dls <stdout bytes> <stderr bytes> <0|1: ended by an exception>\n" stdout stderr
 *
 * An exception is written to the captured stderr the way the JVM reports an uncaught one.
 * The class is org.apache.kafka.tools.DumpLogSegments (Kafka 4, Java) unless the system
 * property dls.main names another (kafka.tools.DumpLogSegments: Kafka 3, Scala).
 */
public class DlsBatch {
    public static void main(String[] args) throws Exception {
        PrintStream realOut = System.out;
        OutputStream sink = new java.io.FileOutputStream(java.io.FileDescriptor.out);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String main = System.getProperty("dls.main", "org.apache.kafka.tools.DumpLogSegments");
        java.lang.reflect.Method dump = Class.forName(main).getMethod("main", String[].class);
        // One pair of streams for the whole run, over buffers swapped per file: Scala's
        // Console keeps the System.out it first saw, so a new PrintStream per file would
        // leave Kafka 3's output in the first file's buffer.
        Swap out = new Swap();
        Swap err = new Swap();
        PrintStream o = new PrintStream(out, true, StandardCharsets.UTF_8);
        PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8);
        System.setOut(o);
        System.setErr(e);
        String line;
        while ((line = in.readLine()) != null) {
            String[] fields = line.split("\t");
            String file = fields[fields.length - 1];
            out.reset();
            err.reset();
            List<String> argv = new ArrayList<>(List.of(args));
            argv.addAll(List.of(fields).subList(0, fields.length - 1));
            argv.add("--files");
            argv.add(file);
            int crashed = 0;
            try {
                dump.invoke(null, (Object) argv.toArray(new String[0]));
            } catch (java.lang.reflect.InvocationTargetException t) {
                crashed = 1;
                e.println("Exception in thread \"main\" " + t.getCause());
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

    /** A byte buffer that one long-lived PrintStream writes into, emptied per file. */
    static final class Swap extends OutputStream {
        private ByteArrayOutputStream buffer = new ByteArrayOutputStream();

        @Override
        public void write(int b) {
            buffer.write(b);
        }

        @Override
        public void write(byte[] b, int off, int len) {
            buffer.write(b, off, len);
        }

        void reset() {
            buffer = new ByteArrayOutputStream();
        }

        byte[] toByteArray() {
            return buffer.toByteArray();
        }
    }
}
