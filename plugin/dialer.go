package plugin

import (
	"github.com/redpanda-data/benthos/v4/public/service"
)

// The tcp block's fields: the names netutil.DialerConfigFromParsed reads.
const (
	fieldTCPConnectTimeout = "connect_timeout"
	fieldTCPKeepAlive      = "keep_alive"
	fieldTCPKeepAliveIdle  = "idle"
	fieldTCPKeepAliveIntvl = "interval"
	fieldTCPKeepAliveCount = "count"
	fieldTCPUserTimeout    = "tcp_user_timeout"
)

// tcpFieldSpec is the tcp block: netutil.DialerConfigSpec's fields (names,
// types, defaults, nesting: TestTCPSpecMatchesNetutil holds it to them), so that
// netutil.DialerConfigFromParsed parses it, but described as the input and
// the output dial (who names the component: "input", "output"). netutil's
// own descriptions are wrong here: its connect_timeout "Zero disables",
// where 0s is kgo's 10s here (kafkaconn.Parse reads the block).
func tcpFieldSpec(who string) *service.ConfigField {
	return service.NewObjectField(fieldTCP,
		service.NewDurationField(fieldTCPConnectTimeout).
			Description("How long a dial of a broker may take, the TLS handshake included when TLS is on. "+
				"0s, the default, is kgo's 10s: a dial without a bound could wait minutes on an unreachable host. "+
				"A negative value is a config error.").
			Default("0s"),
		service.NewObjectField(fieldTCPKeepAlive,
			service.NewDurationField(fieldTCPKeepAliveIdle).
				Description("How long a connection is idle before the first keep-alive probe. "+
					"0s is 15s. A negative value turns keep-alive probes off.").
				Default("15s"),
			service.NewDurationField(fieldTCPKeepAliveIntvl).
				Description("The time between keep-alive probes. 0s is 15s.").
				Default("15s"),
			service.NewIntField(fieldTCPKeepAliveCount).
				Description("How many keep-alive probes may go unanswered before the connection is dropped. 0 is 9.").
				Default(9),
		).Description("TCP keep-alive probes of broker connections.").
			Optional(),
		service.NewDurationField(fieldTCPUserTimeout).
			Description("How long sent data may stay unacknowledged before the connection is dropped (TCP_USER_TIMEOUT): "+
				"Linux only (kernel 2.6.37+), ignored elsewhere. 0s, the default, leaves it unset. "+
				"When set, `keep_alive.idle` must be greater (RFC 5482): otherwise a config error, "+
				"where the redpanda "+who+" logs it and dials without the block.").
			Default("0s"),
	).
		Description("TCP socket settings of broker connections: the redpanda " + who + "'s fields, except that a `connect_timeout` of 0s is a 10s timeout here, not none. " +
			"The block always applies: a config that leaves it, or some of its fields, out dials with their defaults. " +
			"With TLS on, the TLS handshake runs over this dialer (the server name is each broker's host unless the TLS settings name one).").
		Optional().
		Advanced()
}
