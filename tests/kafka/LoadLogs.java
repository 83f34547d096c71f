import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.server.util.KafkaScheduler;
import org.apache.kafka.storage.internals.checkpoint.OffsetCheckpointFile;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
import org.apache.kafka.storage.internals.log.ProducerStateManagerConfig;
import org.apache.kafka.storage.internals.log.UnifiedLog;
import org.apache.kafka.storage.log.metrics.BrokerTopicStats;

/**
 * Loads partition directories with Kafka's own UnifiedLog.create, as LogManager.loadLog does
 * at a broker's start, then closes each log as a broker's clean stop does. The oracle of
 * tests/kafka/test_clean_parity.py: one JVM for every case.
 *
 *   java LoadLogs < lines of "LOGDIR<TAB>CLEAN<TAB>PARTITION PARTITION ..."
 *
 * CLEAN is "true" when the log dir held .kafka_cleanshutdown. The recovery point and log
 * start offset come from LOGDIR's checkpoints as LogManager reads them, with Kafka's
 * OffsetCheckpointFile (an unreadable file: none, so 0). One line per partition on stdout:
 *
 *   "@@ok LOGDIR/PARTITION LOG_END_OFFSET RECOVERY_POINT" or "@@fail LOGDIR/PARTITION EXCEPTION: MESSAGE"
 */
public class LoadLogs {
    /** LogManager.loadLogs' reading: Kafka's own OffsetCheckpointFile, and no entries where it
     *  throws (LogManager logs a warning and recovers from 0). A missing file is not created. */
    static Map<String, Long> checkpoint(File f) {
        Map<String, Long> out = new HashMap<>();
        if (!f.isFile()) return out;
        try {
            Map<TopicPartition, Long> read = new OffsetCheckpointFile(f, new LogDirFailureChannel(1)).read();
            for (Map.Entry<TopicPartition, Long> e : read.entrySet()) {
                out.put(e.getKey().topic() + "-" + e.getKey().partition(), e.getValue());
            }
        } catch (Exception e) {
            return new HashMap<>();
        }
        return out;
    }

    public static void main(String[] args) throws Exception {
        KafkaScheduler scheduler = new KafkaScheduler(1);
        scheduler.startup();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.split("\t");
            load(scheduler, new File(f[0]), Boolean.parseBoolean(f[1]), f[2].split(" "));
        }
        System.out.flush();
        scheduler.shutdown();
        System.exit(0);
    }

    static void load(KafkaScheduler scheduler, File logDir, boolean clean, String[] parts) {
        Map<String, Long> recoveryPoints = checkpoint(new File(logDir, "recovery-point-offset-checkpoint"));
        Map<String, Long> logStarts = checkpoint(new File(logDir, "log-start-offset-checkpoint"));
        for (String part : parts) {
            File dir = new File(logDir, part);
            try {
                UnifiedLog log = UnifiedLog.create(dir, new LogConfig(new Properties()),
                        logStarts.getOrDefault(part, 0L), recoveryPoints.getOrDefault(part, 0L), scheduler,
                        new BrokerTopicStats(), Time.SYSTEM, 60000, new ProducerStateManagerConfig(86400000, false),
                        600000, new LogDirFailureChannel(1), clean, Optional.empty());
                long leo = log.logEndOffset();
                long rp = log.recoveryPoint();
                log.close();
                System.out.println("@@ok " + dir + " " + leo + " " + rp);
            } catch (Throwable t) {
                String msg = String.valueOf(t.getMessage()).replace('\n', ' ');
                System.out.println("@@fail " + dir + " " + t.getClass().getSimpleName() + ": " + msg);
            }
        }
    }
}
