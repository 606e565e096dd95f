// Java's own JsonConverter, for tests/integration/java_connect/test_java_json_converter.py: each stdin line is
// "<schemas.enable> <decimal.format> <base64 of record bytes>"; each stdout line is base64 of
// what JsonConverter so configured writes after reading them (toConnectData, then
// fromConnectData), "NULL" for no bytes, or "ERR <reason>" when it refuses them.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;

import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.json.JsonConverter;

public class JsonConverterProbe {
    public static void main(String[] args) throws Exception {
        Map<String, JsonConverter> converters = new HashMap<>();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        StringBuilder out = new StringBuilder();
        for (String line; (line = in.readLine()) != null; ) {
            String[] parts = line.split(" ", 3);
            JsonConverter converter = converters.computeIfAbsent(parts[0] + " " + parts[1], k -> {
                JsonConverter made = new JsonConverter();
                made.configure(Map.of("schemas.enable", parts[0], "decimal.format", parts[1]), false);
                return made;
            });
            try {
                SchemaAndValue read = converter.toConnectData("t", Base64.getDecoder().decode(parts[2]));
                byte[] written = converter.fromConnectData("t", read.schema(), read.value());
                out.append(written == null ? "NULL" : Base64.getEncoder().encodeToString(written)).append('\n');
            } catch (RuntimeException e) {
                out.append("ERR ").append(String.valueOf(e.getMessage()).replace('\n', ' ')).append('\n');
            }
        }
        System.out.print(out);
    }
}
