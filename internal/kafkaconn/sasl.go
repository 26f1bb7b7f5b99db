package kafkaconn

import (
	"context"
	"errors"
	"fmt"

	"github.com/redpanda-data/benthos/v4/public/service"
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

// parseSASL reads the sasl list, nil when the config has none.
func parseSASL(pc *service.ParsedConfig) ([]SASL, error) {
	if !pc.Contains(FieldSASL) {
		return nil, nil
	}
	list, err := pc.FieldObjectList(FieldSASL)
	if err != nil {
		return nil, err
	}
	var out []SASL
	var errs []error
	for _, e := range list {
		var s SASL
		s.Mechanism, err = e.FieldString(FieldSASLMechanism)
		errs = append(errs, err)
		s.Username, _ = e.FieldString(FieldSASLUsername)
		s.Password, _ = e.FieldString(FieldSASLPassword)
		s.Token, _ = e.FieldString(FieldSASLToken)
		if e.Contains(FieldSASLExtensions) {
			ext, err := e.FieldStringMap(FieldSASLExtensions)
			errs = append(errs, err)
			if len(ext) > 0 { // Benthos gives an absent map as empty
				s.Extensions = ext
			}
		}
		s.AWS = e.Contains(FieldSASLAWS)
		out = append(out, s)
	}
	return out, errors.Join(errs...)
}

// ValidateSASL checks each entry of list and returns an error for each
// problem, naming the entry (sasl[i].field): PLAIN and SCRAM need a user
// name, OAUTHBEARER a token; MechanismNone needs nothing; any other
// mechanism is an *UnknownMechanismError. The aws block is not checked:
// rejecting it is the input's business.
func ValidateSASL(list []SASL) []error {
	var errs []error
	for i, s := range list {
		switch s.Mechanism {
		case MechanismPlain, MechanismScram256, MechanismScram512:
			if s.Username == "" {
				errs = append(errs, fmt.Errorf("%s[%d].%s: %s needs a user name", FieldSASL, i, FieldSASLUsername, s.Mechanism))
			}
		case MechanismOAuthBearer:
			if s.Token == "" {
				errs = append(errs, fmt.Errorf("%s[%d].%s: %s needs a token", FieldSASL, i, FieldSASLToken, s.Mechanism))
			}
		case MechanismNone:
		default:
			errs = append(errs, &UnknownMechanismError{Index: i, Mechanism: s.Mechanism})
		}
	}
	return errs
}

// UnknownMechanismError is ValidateSASL's error for an entry whose
// mechanism is not built in. It is a value, safe for concurrent use.
type UnknownMechanismError struct {
	Index     int    // the entry's index in the sasl list
	Mechanism string // the name it gives
}

// Error names the entry, the mechanism and the mechanisms built in.
func (e *UnknownMechanismError) Error() string {
	return fmt.Sprintf("%s[%d].%s (%q) must be one of %s, %s, %s, %s, %s", FieldSASL, e.Index, FieldSASLMechanism, e.Mechanism,
		MechanismPlain, MechanismScram256, MechanismScram512, MechanismOAuthBearer, MechanismNone)
}
