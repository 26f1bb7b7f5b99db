// Package kafkaconn is how watermark-connect connects to Kafka: the
// connection settings of a kafka_watermark input (seed brokers, client ID,
// TLS, SASL, the tcp block, and the retries and timeouts of requests), read
// from the input's parsed config (Parse), and the franz-go (kgo) client
// options they make (Config.Opts). The input adds its consumer group
// options to these; `watermark-connect status` uses them as they are, so
// that both read the same fields, and dial, authenticate and retry the same
// way.
//
// What it adds to kgo's own connection handling, and why:
//
//   - Every broker is dialled over the tcp block's dialer, whose
//     connect_timeout of 0s is kgo's 10s (DefaultDialTimeout), not none:
//     kgo bounds only the dials of its own dialer (dialer.go).
//   - TLS is dialled over that dialer as kgo's DialTLSConfig dials it over
//     its own, which kgo refuses together with a dialer (dialer.go).
//   - A refused dial is reported to kgo as retriable, so that a broker
//     restart does not end a classic group member's session at its first
//     heartbeat (refused.go).
//   - How often and for how long kgo retries a request follows the group's
//     session timeout (retry.go).
//   - A command (status, demo) retries answers a broker gives only for a
//     while, such as a fresh broker's COORDINATOR_NOT_AVAILABLE, which kgo
//     does not retry for it, within the command's deadline (transient.go).
//   - A broker that accepts connections and never answers is told as such,
//     after SilentAfter rather than at kgo's request timeout, in the
//     input's log and in a command's error (silence.go); connection
//     problems are reported again at a growing interval (report.go).
//
// Files: conn.go (Config and Opts), parse.go (Parse), sasl.go (SASL
// mechanisms, ValidateSASL), dialer.go (the tcp block and TLS), refused.go,
// retry.go, transient.go (Transient, Retry), silence.go (Silence),
// report.go (NextReport).
//
// # Concurrency
//
// Parse, ValidateSASL, Transient and Retry keep no state; a Silence is
// safe for concurrent use (kgo calls its hooks from many goroutines, its
// reports come from timers). Config, SASL, Retries and
// UnknownMechanismError are values, safe for concurrent reads; Opts
// neither keeps nor modifies its Config. The options share the Config's *tls.Config
// and *net.Dialer, which must not be modified once Opts has been called. The
// dial function in the options is safe for concurrent use, as kgo needs (it
// dials from many goroutines): it only reads the dialer and clones the TLS
// config for each dial.
package kafkaconn
