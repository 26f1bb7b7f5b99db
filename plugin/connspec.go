package plugin

import (
	"errors"
	"fmt"
	"strings"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/watermark-connect/watermark-connect/internal/kafkaconn"
)

// The connection's fields that the input and the output share, as
// kafkaconn.Parse reads them for both: the sasl block here, the tcp block in
// dialer.go, seed_brokers, client_id and tls in each spec. who names the
// component in descriptions and messages ("input", "output").

// saslNotBuilt says what to use instead of a mechanism the enum takes only
// to name it.
const saslNotBuilt = "use PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER"

// saslFieldSpec is the sasl block of a component.
func saslFieldSpec(who string) *service.ConfigField {
	rejected := "Rejected: not built into this " + who + "; " + saslNotBuilt + "."
	return service.NewObjectListField(fieldSASL,
		service.NewStringAnnotatedEnumField(fieldSASLMechanism, map[string]string{
			saslPlain:           "Plain text authentication.",
			saslScram256:        "SCRAM authentication (RFC 5802) with SHA-256.",
			saslScram512:        "SCRAM authentication (RFC 5802) with SHA-512.",
			saslOAuthBearer:     "OAuth bearer token authentication.",
			saslNone:            "No authentication: the entry is skipped, as in the redpanda " + who + ".",
			saslAWSMSKIAM:       rejected,
			saslRedpandaCloudSA: rejected,
		}).
			Description("The SASL mechanism."),
		service.NewStringField(fieldSASLUsername).Description("The user name, for PLAIN and SCRAM.").Default(""),
		service.NewStringField(fieldSASLPassword).Description("The password, for PLAIN and SCRAM.").Default("").Secret(),
		service.NewStringField(fieldSASLToken).Description("The bearer token, for OAUTHBEARER.").Default("").Secret(),
		service.NewStringMapField(fieldSASLExtensions).Description("Key/value pairs added to OAUTHBEARER authentication requests.").Optional(),
		// An object without declared fields: lint checks only that it is an
		// object, whatever fields it holds (the redpanda components' region,
		// endpoint, credentials), and Benthos leaves it unset when absent (a
		// map field would be filled in empty, and so always rejected). Set,
		// the lint rule and validate reject it.
		service.NewObjectField(fieldSASLAWS).Description("Rejected: the redpanda "+who+"'s settings for `AWS_MSK_IAM`, which is not built into this "+who+".").Optional(),
	).
		Description("SASL authentication, tried in order.").
		Optional().Advanced().
		Example([]any{map[string]any{"mechanism": saslScram512, "username": "${KAFKA_USER}", "password": "${KAFKA_PASSWORD}"}})
}

// validateSASL reports each problem of the sasl list (kafkaconn.ValidateSASL),
// naming the mechanisms the enum takes only to say what to use instead, and
// the aws block.
func validateSASL(list []kafkaconn.SASL, who string, report func(error)) {
	for i, s := range list {
		if s.AWS {
			report(fmt.Errorf("%s[%d].%s: AWS_MSK_IAM is not built into this %s: remove these settings and %s", fieldSASL, i, fieldSASLAWS, who, saslNotBuilt))
		}
	}
	for _, err := range kafkaconn.ValidateSASL(list) {
		var unknown *kafkaconn.UnknownMechanismError
		if errors.As(err, &unknown) && (unknown.Mechanism == saslAWSMSKIAM || unknown.Mechanism == saslRedpandaCloudSA) {
			err = fmt.Errorf("%s[%d].%s: %s is not built into this %s: %s", fieldSASL, unknown.Index, fieldSASLMechanism, unknown.Mechanism, who, saslNotBuilt)
		}
		report(err)
	}
}

// authDescription names a connection's security settings for connection
// errors ("with TLS and SASL SCRAM-SHA-512"), never a secret; "" without.
func authDescription(c kafkaconn.Config) string {
	var parts []string
	if c.TLS != nil {
		parts = append(parts, "TLS")
	}
	for _, s := range c.SASL {
		if s.Mechanism != saslNone {
			parts = append(parts, "SASL "+s.Mechanism)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " with " + strings.Join(parts, " and ")
}
