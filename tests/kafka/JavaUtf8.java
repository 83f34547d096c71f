// Prints, for each hex line on stdin, the UTF-16 code units of new String(bytes, UTF_8) in hex:
// the oracle for kdump.format.javautf8 (tests/test_javautf8.py).
import java.io.*;
import java.nio.charset.StandardCharsets;
public class JavaUtf8 {
  public static void main(String[] a) throws Exception {
    BufferedReader r = new BufferedReader(new InputStreamReader(System.in));
    PrintStream o = new PrintStream(new BufferedOutputStream(System.out, 1<<16), false);
    String line;
    while ((line = r.readLine()) != null) {
      byte[] b = new byte[line.length()/2];
      for (int i = 0; i < b.length; i++) b[i] = (byte) Integer.parseInt(line.substring(2*i, 2*i+2), 16);
      String s = new String(b, StandardCharsets.UTF_8);
      StringBuilder sb = new StringBuilder();
      for (int i = 0; i < s.length(); i++) { sb.append(String.format("%04x", (int) s.charAt(i))); }
      o.println(sb);
    }
    o.flush();
  }
}
