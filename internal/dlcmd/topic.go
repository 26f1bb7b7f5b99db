package dlcmd

import (
	"fmt"
	"strings"

	"github.com/watermark-connect/watermark-connect/internal/status"
)

// Field names of the kafka_watermark input's dead-letter block, as a config
// holds them: dead_letter.topic.
const (
	fieldDeadLetter      = "dead_letter"
	fieldDeadLetterTopic = "topic"
)

// flagTopic is the flag that names the dead-letter topic.
const flagTopic = "dead-letter-topic"

// deadLetterTopic returns the topic to read: flag when set (it overrides
// the config, as status's flags do), else the config's dead_letter.topic
// when it is static. A topic interpolated per message (a "${!" in it) names
// no one topic, so the flag is then required, and the error says so.
func deadLetterTopic(flag string, in status.Input, fromConfig bool) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if !fromConfig {
		return "", fmt.Errorf("--%s is required (or -c with a kafka_watermark input whose %s.%s is static)", flagTopic, fieldDeadLetter, fieldDeadLetterTopic)
	}
	block, _ := in.Fields[fieldDeadLetter].(map[string]any)
	topic, _ := block[fieldDeadLetterTopic].(string)
	switch {
	case topic == "":
		return "", fmt.Errorf("%s: no %s.%s: give the topic with --%s", in.Where, fieldDeadLetter, fieldDeadLetterTopic, flagTopic)
	case strings.Contains(topic, "${!"):
		return "", fmt.Errorf("%s: %s.%s (%q) is interpolated per message, so it names no one topic: give the topic with --%s", in.Where, fieldDeadLetter, fieldDeadLetterTopic, topic, flagTopic)
	}
	return topic, nil
}
