// Hadoop's MiniDFSCluster (one NameNode, one DataNode) on 127.0.0.1 for the HDFS tests,
// run as a single-file program: java -cp 'target/hadoop-jars/*' MiniDfs.java BASE_DIR.
// Prints "READY <namenode port>" once the cluster is up; stops when its stdin closes.
import java.io.File;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.MiniDFSCluster;

public class MiniDfs {
    public static void main(String[] args) throws Exception {
        Configuration conf = new Configuration();
        conf.setBoolean("dfs.permissions.enabled", false);
        conf.set("dfs.namenode.rpc-bind-host", "127.0.0.1");
        conf.set("dfs.datanode.hostname", "127.0.0.1");
        conf.setBoolean("dfs.datanode.use.datanode.hostname", false);
        conf.setLong("dfs.blocksize", 1L << 20);   // several blocks per segment: reads cross blocks
        conf.setLong("dfs.namenode.fs-limits.min-block-size", 1L << 16);
        MiniDFSCluster cluster = new MiniDFSCluster.Builder(conf, new File(args[0]))
                .numDataNodes(1).format(true).build();
        cluster.waitActive();
        // Ready means a write goes through the DataNode, not only that the NameNode answers.
        FileSystem fs = cluster.getFileSystem();
        try (FSDataOutputStream out = fs.create(new Path("/.ready"))) {
            out.write(1);
        }
        fs.delete(new Path("/.ready"), false);
        System.out.println("READY " + cluster.getNameNodePort());
        System.out.flush();
        while (System.in.read() != -1) {
        }
        cluster.shutdown();
    }
}
