package kafkaconn

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// The SASL mechanisms built in, by the names the sasl[].mechanism field
// takes (franz-go's names for them), and none.
const (
	MechanismPlain       = "PLAIN"
	MechanismScram256    = "SCRAM-SHA-256"
	MechanismScram512    = "SCRAM-SHA-512"
	MechanismOAuthBearer = "OAUTHBEARER"
	// MechanismNone is no authentication: the entry is skipped, as in
	// Redpanda Connect's redpanda input.
	MechanismNone = "none"
)

// SASL is one entry of the sasl list: a mechanism and its credentials. A
// SASL is a value, safe for concurrent reads; it holds secrets (Password,
// Token), which nothing in this package prints.
type SASL struct {
	Mechanism          string            // one of the Mechanism constants, or a name ValidateSASL rejects
	Username, Password string            // PLAIN and SCRAM
	Token              string            // OAUTHBEARER
	Extensions         map[string]string // OAUTHBEARER, optional
	// AWS is whether the entry has the redpanda input's aws block, which
	// the input rejects: AWS_MSK_IAM is not built in.
	AWS bool
}

// mechanisms returns franz-go's mechanism for each entry that is not
// MechanismNone, in order.
func mechanisms(list []SASL) []sasl.Mechanism {
	var out []sasl.Mechanism
	for _, s := range list {
		if s.Mechanism != MechanismNone {
			out = append(out, s.mechanism())
		}
	}
	return out
}

// mechanism returns franz-go's implementation of s.
func (s SASL) mechanism() sasl.Mechanism {
	switch s.Mechanism {
	case MechanismPlain:
		return plain.Auth{User: s.Username, Pass: s.Password}.AsMechanism()
	case MechanismScram256:
		return scram.Auth{User: s.Username, Pass: s.Password}.AsSha256Mechanism()
	case MechanismScram512:
		return scram.Auth{User: s.Username, Pass: s.Password}.AsSha512Mechanism()
	case MechanismOAuthBearer:
		return oauth.Auth{Token: s.Token, Extensions: s.Extensions}.AsMechanism()
	}
	return unbuilt(s.Mechanism)
}

// unbuilt is a mechanism that is not built in, which ValidateSASL rejects:
// authenticating with it fails, where guessing another would send the
// credentials the wrong way.
type unbuilt string

func (u unbuilt) Name() string { return string(u) }

func (u unbuilt) Authenticate(context.Context, string) (sasl.Session, []byte, error) {
	return nil, nil, fmt.Errorf("SASL mechanism %q is not built in", string(u))
}
