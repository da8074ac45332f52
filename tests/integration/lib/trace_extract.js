// Reads W3C trace context the way OpenTelemetry does: each argument is a traceparent value,
// extracted with @opentelemetry/core's W3CTraceContextPropagator (tests/integration/node).
// Prints one JSON line per value: {"valid", "traceId", "spanId", "traceFlags"}.
const path = require("path");
const modules = path.join(__dirname, "..", "node", "node_modules");
const api = require(path.join(modules, "@opentelemetry/api"));
const { W3CTraceContextPropagator } = require(path.join(modules, "@opentelemetry/core"));

const propagator = new W3CTraceContextPropagator();
for (const value of process.argv.slice(2)) {
    const ctx = propagator.extract(api.ROOT_CONTEXT, { traceparent: value }, api.defaultTextMapGetter);
    const span = api.trace.getSpanContext(ctx);
    const valid = span !== undefined && api.isSpanContextValid(span);
    console.log(JSON.stringify(valid ? { valid, traceId: span.traceId, spanId: span.spanId, traceFlags: span.traceFlags }
                                     : { valid: false }));
}
