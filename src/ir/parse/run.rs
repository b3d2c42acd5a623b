//! The optional `run` section: grid, elements and per-buffer inputs (shared with pipeline
//! buffer contents).

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;

use super::*;

pub(crate) struct RawRun(pub(crate) RunSpec);

pub(crate) const RUN_KEYS: &str = "grid, elements, inputs";

impl<'de> Deserialize<'de> for RawRun {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RunSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a run object {\"elements\" | \"grid\", \"inputs\"}")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RunSpec, A::Error> {
                let mut run = RunSpec::default();
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "grid" => run.grid = Some(map.next_value::<Dims>()?.0),
                        "elements" => run.elements = Some(map.next_value::<u64>()?),
                        "inputs" => run.inputs = map.next_value::<RawInputs>()?.0,
                        other => {
                            return Err(err(
                                format!("unknown key `{other}` in run"),
                                format!("remove it; run has the keys {RUN_KEYS}"),
                            ))
                        }
                    }
                }
                Ok(run)
            }
        }
        d.deserialize_map(V).map(RawRun)
    }
}

pub(crate) struct RawInputs(Vec<(String, InputSpec)>);

impl<'de> Deserialize<'de> for RawInputs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Vec<(String, InputSpec)>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object mapping buffer names to input specs")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut v: Vec<(String, InputSpec)> = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    if v.iter().any(|(k, _)| *k == key) {
                        return Err(err(format!("duplicate input `{key}`"), "keep one of them"));
                    }
                    let spec: RawInput = map.next_value()?;
                    v.push((key, spec.0));
                }
                Ok(v)
            }
        }
        d.deserialize_map(V).map(RawInputs)
    }
}

pub(crate) struct RawInput(pub(crate) InputSpec);

pub(crate) const INPUT_KEYS: &str = "len, fill, seed, range, data, file";

impl<'de> Deserialize<'de> for RawInput {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = InputSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an input spec {\"len\", \"fill\"} | {\"data\"} | {\"file\"}")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<InputSpec, A::Error> {
                let mut fields = InputFields::default();
                while let Some(key) = map.next_key::<String>()? {
                    if !fields.take(&key, &mut map)? {
                        return Err(err(
                            format!("unknown key `{key}` in an input"),
                            format!("remove it; an input has the keys {INPUT_KEYS}"),
                        ));
                    }
                }
                fields.finish()
            }
        }
        d.deserialize_map(V).map(RawInput)
    }
}

/// The keys of one `run.inputs` entry, gathered one at a time so that other objects that embed
/// an input spec (a pipeline buffer adds `type` and `transient`) parse it the same way.
#[derive(Default)]
pub(crate) struct InputFields {
    len: Option<u64>,
    fill: Option<String>,
    seed: Option<u64>,
    range: Option<(f64, f64)>,
    data: Option<DataArray>,
    file: Option<String>,
}

impl InputFields {
    /// Reads the value of `key` if it is an input key; `false` leaves the value unread.
    pub(crate) fn take<'de, A: MapAccess<'de>>(
        &mut self,
        key: &str,
        map: &mut A,
    ) -> Result<bool, A::Error> {
        match key {
            "len" => self.len = Some(map.next_value::<u64>()?),
            "fill" => self.fill = Some(map.next_value::<String>()?),
            "seed" => self.seed = Some(map.next_value::<u64>()?),
            "range" => {
                let r: [f64; 2] = map.next_value()?;
                if !(r[0].is_finite() && r[1].is_finite() && r[0] <= r[1]) {
                    return Err(err(
                        format!("range {r:?} is not [low, high] with low <= high"),
                        "write \"range\": [low, high] with finite numbers",
                    ));
                }
                self.range = Some((r[0], r[1]));
            }
            "data" => self.data = Some(map.next_value::<RawData>()?.0),
            "file" => self.file = Some(map.next_value::<String>()?),
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The input spec once every key is read: exactly one source, `seed`/`range` only with
    /// `random`.
    pub(crate) fn finish<E: de::Error>(self) -> Result<InputSpec, E> {
        let InputFields {
            len,
            fill,
            seed,
            range,
            data,
            file,
        } = self;
        let sources = fill.is_some() as u8 + data.is_some() as u8 + file.is_some() as u8;
        if sources != 1 {
            return Err(err(
                "an input needs exactly one of `fill`, `data`, `file`",
                "keep one source, e.g. {\"fill\": \"random\", \"seed\": 1}",
            ));
        }
        if (seed.is_some() || range.is_some()) && fill.as_deref() != Some("random") {
            return Err(err(
                "`seed` and `range` only apply to \"fill\": \"random\"",
                "remove them or use \"fill\": \"random\"",
            ));
        }
        let source = if let Some(f) = fill {
            InputSource::Fill(match f.as_str() {
                "zeros" => Fill::Zeros,
                "ones" => Fill::Ones,
                "iota" => Fill::Iota,
                "random" => Fill::Random {
                    seed: seed.unwrap_or(0),
                    range,
                },
                other => {
                    return Err(err(
                        format!("unknown fill `{other}`"),
                        "use zeros, ones, iota or random",
                    ))
                }
            })
        } else if let Some(d) = data {
            InputSource::Data(d)
        } else {
            InputSource::File(file.unwrap_or_default())
        };
        Ok(InputSpec { len, source })
    }
}

/// A `data` array, each element stored compactly as it is read (see [`DataArray`]): memory
/// grows with the elements' encoding, never with a parsed JSON tree, and running out of it is
/// an error, not an abort.
struct RawData(DataArray);

impl<'de> Deserialize<'de> for RawData {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = DataArray;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of numbers")
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<DataArray, A::Error> {
                let mut data = crate::ir::data::DataBuilder::default();
                while let Some(DataElem(l)) = seq.next_element()? {
                    data.try_push(l).map_err(|e| {
                        err::<A::Error>(
                            format!(
                                "out of memory after {} data elements ({} bytes held): {e}",
                                data.len(),
                                data.encoded_bytes()
                            ),
                            "move large input data to a raw binary file and name it with \"file\" instead of \"data\"",
                        )
                    })?;
                }
                Ok(data.finish())
            }
        }
        d.deserialize_seq(V).map(RawData)
    }
}

/// One element of a `data` array: a number, true/false, a typed literal, or one of the
/// strings `"inf"`, `"-inf"`, `"nan"` (float buffers only; the conversion to the buffer's type refuses them
/// for integer buffers, where the type is known).
struct DataElem(Literal);

impl<'de> Deserialize<'de> for DataElem {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Literal;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number, true/false, \"inf\", \"-inf\" or \"nan\"")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Literal, E> {
                Ok(Literal::Typed(crate::ir::types::Scalar::Bool(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Literal, E> {
                Ok(Literal::Int(v as i128))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Literal, E> {
                Ok(Literal::Int(v as i128))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Literal, E> {
                Ok(Literal::Float(f32_text::float_lit(v)?))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Literal, E> {
                match v {
                    "inf" => Ok(Literal::Float(FloatLit::exact(f64::INFINITY))),
                    "-inf" => Ok(Literal::Float(FloatLit::exact(f64::NEG_INFINITY))),
                    "nan" => Ok(Literal::Float(FloatLit::exact(f64::NAN))),
                    _ => Err(err(
                        format!("`{v}` is not a data element"),
                        "write plain numbers, e.g. [1, 2.5, -3]; float buffers also take \"inf\", \"-inf\", \"nan\"",
                    )),
                }
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Literal, A::Error> {
                // A typed literal (`{"f32": "inf"}`, `{"u8": 7}`) is a data element too.
                match ExprVisitor.visit_map(map)? {
                    Expr::Lit(l) => Ok(l),
                    _ => Err(err(
                        "data elements must be numbers, true/false or typed literals",
                        "write plain numbers, e.g. [1, 2.5, -3]",
                    )),
                }
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, _: A) -> Result<Literal, A::Error> {
                Err(err(
                    "data elements must be numbers or true/false",
                    "write plain numbers, e.g. [1, 2.5, -3]",
                ))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Literal, E> {
                Err(err(
                    "null is not a data element",
                    "write plain numbers, e.g. [1, 2.5, -3]",
                ))
            }
        }
        d.deserialize_any(V).map(DataElem)
    }
}
