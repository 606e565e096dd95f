// Java's own JsonConverter, for tests/integration/test_java_json_converter.py: each stdin line is
// base64 of record bytes; each stdout line is base64 of what JsonConverter writes after reading
// them (toConnectData, then fromConnectData), or "ERR <reason>" when it refuses them.
// Arguments: schemas.enable, decimal.format.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Map;

import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.json.JsonConverter;

public class JsonConverterProbe {
    public static void main(String[] args) throws Exception {
        JsonConverter converter = new JsonConverter();
        converter.configure(Map.of("schemas.enable", args[0], "decimal.format", args[1]), false);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        StringBuilder out = new StringBuilder();
        for (String line; (line = in.readLine()) != null; ) {
            try {
                SchemaAndValue read = converter.toConnectData("t", Base64.getDecoder().decode(line));
                byte[] written = converter.fromConnectData("t", read.schema(), read.value());
                out.append(written == null ? "NULL" : Base64.getEncoder().encodeToString(written)).append('\n');
            } catch (RuntimeException e) {
                out.append("ERR ").append(String.valueOf(e.getMessage()).replace('\n', ' ')).append('\n');
            }
        }
        System.out.print(out);
    }
}
