// Package deadletter is the record format of the dead-letter topics of the
// kafka_watermark and kafka_share inputs: what a record that keeps failing
// becomes when the input produces it there (Letter), how its provenance is
// read back (Parse), and what it becomes when it is sent back to be
// processed again (Redriven). It imports no Benthos package: the inputs,
// `watermark-connect dead-letter`, `watermark-connect status` and users'
// scripts share it.
//
// # Vocabulary
//
// The origin record is the record the input consumed and could not deliver.
// Its dead letter is a copy of it produced to the dead-letter topic: the
// origin's key, value, timestamp and headers, with provenance headers added.
// The provenance says where the origin record was (topic, partition, offset),
// when it was written (its timestamp), and how it failed (how many
// deliveries, the error class of the last, when the first failed, which
// member saw it). Redriving a dead letter produces it again, usually to its
// origin topic, without the provenance and with dead_letter_redriven_from
// naming the dead letter it came from.
//
// # Headers
//
// Every header this package writes starts with Prefix; the names are a
// contract with users and scripts, and never change meaning. Values are
// plain text: numbers are decimal ASCII, times are Unix milliseconds, the
// topic is the origin topic's name. A record is a dead letter when it carries
// all eight provenance headers (HeaderTopic to HeaderMember) once each; the
// input never writes one twice, because Letter drops every header of the
// origin record whose key starts with Prefix before it adds its own, so that
// a record dead-lettered again after a redrive carries one provenance, the
// latest. The headers the origin record had otherwise keep their order,
// before the provenance.
//
// A dead letter written by the kafka_share input carries a ninth header
// after the eight, HeaderShareGroup, naming its share group, so that a
// dead-letter topic several groups or inputs write to can be read per
// group (`watermark-connect status --share-group` counts one group's). It
// is optional: kafka_watermark's dead letters have none, and Parse accepts
// a record without it; when present it must be there once, and not empty.
//
// Parse reads untrusted input (anyone who may produce to the topic writes
// it): it never panics, bounds what it quotes in its errors, and accepts a
// record only when every provenance header is present once with a valid
// value.
//
// # Concurrency
//
// The functions keep no state and are safe for concurrent use. Letter and
// Redriven never modify their argument, but share its key, value and header
// values with the record they return (nothing is copied that need not be):
// neither may be modified while the other is in use. A Provenance is a value.
package deadletter
