// Test harness for the real jmx_exporter (tests/support/jmx_reference.py compiles it at test time).
//
//   java -javaagent:jmx_prometheus_javaagent.jar=127.0.0.1:PORT:rules.yml -cp DIR JmxHarness beans FILE
//       registers one DynamicMBean per object name of FILE (lines: objectName TAB attribute TAB type TAB value,
//       type one of long, double, boolean, string), prints READY and waits for stdin to close.
//   java -cp DIR JmxHarness regex FILE
//       FILE holds records "pattern TAB input" (backslash escapes \t \n \\); for each prints
//       "1 TAB g1 TAB g2 ..." when ^.*(?:pattern).*$ matches the input (groups escaped, null as \0), else "0".
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.management.Attribute;
import javax.management.AttributeList;
import javax.management.AttributeNotFoundException;
import javax.management.DynamicMBean;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanInfo;
import javax.management.MBeanServer;
import javax.management.ObjectName;

public class JmxHarness {
    static final class Bean implements DynamicMBean {
        final Map<String, Object> values = new LinkedHashMap<>();
        final Map<String, String> types = new LinkedHashMap<>();

        public Object getAttribute(String name) throws AttributeNotFoundException {
            if (!values.containsKey(name)) throw new AttributeNotFoundException(name);
            return values.get(name);
        }

        public void setAttribute(Attribute a) {}

        public AttributeList getAttributes(String[] names) {
            AttributeList out = new AttributeList();
            for (String n : names) if (values.containsKey(n)) out.add(new Attribute(n, values.get(n)));
            return out;
        }

        public AttributeList setAttributes(AttributeList a) { return new AttributeList(); }

        public Object invoke(String a, Object[] p, String[] s) { return null; }

        public MBeanInfo getMBeanInfo() {
            MBeanAttributeInfo[] infos = new MBeanAttributeInfo[values.size()];
            int i = 0;
            for (String n : values.keySet()) {
                // Description equal to the name: jmx_exporter then leaves it out of HELP.
                infos[i++] = new MBeanAttributeInfo(n, types.get(n), n, true, false, false);
            }
            return new MBeanInfo(Bean.class.getName(), "test bean", infos, null, null, null);
        }
    }

    static String unescape(String s) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '\\' && i + 1 < s.length()) {
                char n = s.charAt(++i);
                b.append(n == 't' ? '\t' : n == 'n' ? '\n' : n == 'r' ? '\r' : n);
            } else {
                b.append(c);
            }
        }
        return b.toString();
    }

    static String escape(String s) {
        return s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r");
    }

    static void beans(String file) throws Exception {
        Map<String, Bean> beans = new LinkedHashMap<>();
        Map<String, String> javaTypes = Map.of("long", "long", "double", "double", "boolean", "boolean",
                                               "string", "java.lang.String");
        for (String line : Files.readAllLines(Paths.get(file), StandardCharsets.UTF_8)) {
            if (line.isEmpty() || line.startsWith("#")) continue;
            String[] f = line.split("\t", -1);
            Bean b = beans.computeIfAbsent(unescape(f[0]), k -> new Bean());
            String attr = unescape(f[1]), type = f[2], v = unescape(f[3]);
            Object value = type.equals("long") ? (Object) Long.valueOf(v)
                    : type.equals("double") ? (Object) Double.valueOf(v)
                    : type.equals("boolean") ? (Object) Boolean.valueOf(v) : v;
            b.values.put(attr, value);
            b.types.put(attr, javaTypes.get(type));
        }
        MBeanServer server = ManagementFactory.getPlatformMBeanServer();
        for (Map.Entry<String, Bean> e : beans.entrySet()) {
            server.registerMBean(e.getValue(), new ObjectName(e.getKey()));
        }
        System.out.println("READY " + beans.size());
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        while (in.readLine() != null) {
            // wait for stdin to close
        }
    }

    static void regex(String file) throws Exception {
        List<String> lines = Files.readAllLines(Paths.get(file), StandardCharsets.UTF_8);
        StringBuilder out = new StringBuilder();
        for (String line : lines) {
            String[] f = line.split("\t", -1);
            String result;
            try {
                Matcher m = Pattern.compile("^.*(?:" + unescape(f[0]) + ").*$").matcher(unescape(f[1]));
                if (m.matches()) {
                    StringBuilder b = new StringBuilder("1");
                    for (int g = 1; g <= m.groupCount(); g++) {
                        b.append('\t').append(m.group(g) == null ? "\\0" : escape(m.group(g)));
                    }
                    result = b.toString();
                } else {
                    result = "0";
                }
            } catch (Exception e) {
                result = "E\t" + escape(e.getClass().getSimpleName());
            }
            out.append(result).append('\n');
        }
        System.out.print(out);
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        if (args[0].equals("beans")) beans(args[1]);
        else regex(args[1]);
    }
}
