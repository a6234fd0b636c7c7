//! shader_runner's `[vertex data]`: a table of vertex attributes, one column per attribute
//! (or matrix column), one row per vertex, which `draw arrays` reads.
//!
//! The header names each column `NAME/TYPE/SIZE[/COLUMN]`: the vertex shader input it feeds
//! (`value[1]` an element of an array input), the type its values are written in (`float`,
//! `double`, `int`, `uint`, `byte`, `ubyte`, `short`, `ushort`), the number of components (a
//! count, or a GLSL type whose column size it is: `vec3`, `dmat2x4`), and for a matrix the column
//! it is. Values read as piglit reads them: numbers, or `0x...` bits. As in GL, an attribute
//! with fewer components than its input is completed with (0, 0, 0, 1), integers written for a
//! float input are converted to floats, and the inputs no column feeds read (0, 0, 0, 1).

use crate::parse::ParseError;
use crate::run::parse_value;
use shrew_engine::ir::{Mode, Scalar, Shader, Type};
use shrew_engine::ops::BaseType;
use std::collections::BTreeMap;
use std::ops::Range;

/// A parsed `[vertex data]` section.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VertexData {
    pub columns: Vec<Column>,
    /// Each vertex's values, as written, column by column (each column's components).
    pub rows: Vec<Vec<String>>,
}

/// One column of the header.
#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    /// The input's name, without an array index.
    pub name: String,
    /// The array element, for `name[i]`.
    pub element: u32,
    /// The matrix column (0 for vectors).
    pub matrix_column: u32,
    /// The type the values are written in (`float` and `double` alike: the input's type
    /// decides the bits).
    pub written_as: BaseType,
    pub components: u32,
    /// Where the column's values start in a row.
    pub start: usize,
}

impl VertexData {
    /// Parses the section's lines, each with its 1-based line number.
    pub fn parse(lines: &[(usize, &str)]) -> Result<VertexData, ParseError> {
        let mut lines = lines
            .iter()
            .map(|&(line, text)| (line, text.split('#').next().unwrap_or("").trim()))
            .filter(|(_, l)| !l.is_empty());
        let Some((header_line, header)) = lines.next() else {
            return Ok(VertexData::default());
        };
        let bad = |line: usize, text: &str, reason: String| ParseError::BadCommand {
            line,
            command: "vertex data",
            text: text.to_string(),
            reason,
        };
        let mut columns = Vec::new();
        let mut width = 0;
        for text in header.split_whitespace() {
            let column =
                Column::parse(text, width).map_err(|reason| bad(header_line, text, reason))?;
            width += column.components as usize;
            columns.push(column);
        }
        let mut rows = Vec::new();
        for (line, text) in lines {
            let values: Vec<String> = text.split_whitespace().map(str::to_string).collect();
            if values.len() != width {
                return Err(bad(
                    line,
                    text,
                    format!("{} values where the header has {width}", values.len()),
                ));
            }
            rows.push(values);
        }
        Ok(VertexData { columns, rows })
    }

    /// The vertex shader's inputs for the vertices `range`: each input a column feeds, per
    /// vertex, as the flattened components the interpreter and the emulators take.
    pub fn inputs(
        &self,
        range: Range<usize>,
        shader: &Shader,
    ) -> Result<BTreeMap<String, Vec<Vec<u64>>>, String> {
        if range.end > self.rows.len() {
            return Err(format!(
                "vertices {}..{} drawn, [vertex data] has {}",
                range.start,
                range.end,
                self.rows.len()
            ));
        }
        let mut inputs = BTreeMap::new();
        for var in shader.variables.iter().filter(|v| v.mode == Mode::ShaderIn) {
            let Some(shape) = Shape::of(&var.ty) else {
                continue;
            };
            let mut columns: Vec<usize> = (0..self.columns.len())
                .filter(|&i| self.columns[i].name == var.name)
                .collect();
            if columns.is_empty() {
                continue;
            }
            columns.sort_by_key(|&i| (self.columns[i].element, self.columns[i].matrix_column));
            // Element by element, column by column: the input's columns in order (however
            // the front end shaped it, a matrix or an array of its columns).
            if columns.len() != shape.columns as usize {
                return Err(format!(
                    "[vertex data] gives {} of the {} columns of input `{}`",
                    columns.len(),
                    shape.columns,
                    var.name
                ));
            }
            let mut per_vertex = Vec::new();
            for row in &self.rows[range.clone()] {
                let mut values = Vec::with_capacity((shape.columns * shape.rows) as usize);
                for &i in &columns {
                    let column = &self.columns[i];
                    let texts = &row[column.start..column.start + column.components as usize];
                    for component in 0..shape.rows as usize {
                        let value = match texts.get(component) {
                            Some(text) => convert(text, column.written_as, shape.scalar),
                            None => Some(default_component(component, shape.scalar)),
                        };
                        let value = value.ok_or_else(|| {
                            format!(
                                "`{}` is not a value of input `{}`",
                                texts[component], var.name
                            )
                        })?;
                        values.push(value);
                    }
                }
                per_vertex.push(values);
            }
            inputs.insert(var.name.clone(), per_vertex);
        }
        Ok(inputs)
    }
}

impl Column {
    /// The column `text` of the header, its values starting at `start` in a row.
    fn parse(text: &str, start: usize) -> Result<Column, String> {
        let parts: Vec<&str> = text.split('/').collect();
        let (name, written, size, matrix_column) = match parts.as_slice() {
            [name, written, size] => (*name, *written, *size, 0),
            [name, written, size, column] => (
                *name,
                *written,
                *size,
                column
                    .parse()
                    .map_err(|_| format!("`{column}` is not a matrix column"))?,
            ),
            _ => return Err("a column is NAME/TYPE/SIZE[/COLUMN]".into()),
        };
        let written_as = match written {
            "float" | "half" | "double" => BaseType::Float,
            "int" | "byte" | "short" => BaseType::Int,
            "uint" | "ubyte" | "ushort" => BaseType::Uint,
            _ => return Err(format!("unknown type `{written}`")),
        };
        let components = match size.parse::<u32>() {
            Ok(n @ 1..=4) => n,
            Ok(n) => return Err(format!("{n} components")),
            Err(_) => glsl_column_size(size).ok_or_else(|| format!("unknown size `{size}`"))?,
        };
        let (name, element) = match name.split_once('[') {
            Some((base, index)) => (
                base,
                index
                    .trim_end_matches(']')
                    .parse()
                    .map_err(|_| format!("bad array index in `{name}`"))?,
            ),
            None => (name, 0),
        };
        Ok(Column {
            name: name.to_string(),
            element,
            matrix_column,
            written_as,
            components,
            start,
        })
    }
}

/// The number of components of one column of a GLSL type: `vec3` 3, `dmat2x4` 4, `mat3` 3,
/// `int` 1.
fn glsl_column_size(name: &str) -> Option<u32> {
    if matches!(
        name,
        "float" | "double" | "int" | "uint" | "bool" | "int64_t" | "uint64_t"
    ) {
        return Some(1);
    }
    let name = name.trim_start_matches(['d', 'i', 'u', 'b']);
    let name = name.trim_start_matches("64");
    let digit = |s: &str| s.parse::<u32>().ok().filter(|n| (1..=4).contains(n));
    if let Some(n) = name.strip_prefix("vec") {
        return digit(n);
    }
    let dims = name.strip_prefix("mat")?;
    match dims.split_once('x') {
        Some((_, rows)) => digit(rows),
        None => digit(dims),
    }
}

/// How an input's components are laid out: arrays of matrices of vectors.
struct Shape {
    scalar: Scalar,
    /// Columns over all array elements.
    columns: u32,
    /// Components per column.
    rows: u32,
}

impl Shape {
    fn of(ty: &Type) -> Option<Shape> {
        let (inner, elements) = ty.innermost_element();
        let (scalar, columns, rows) = match *inner {
            Type::Scalar(s) => (s, 1, 1),
            Type::Vector(s, n) => (s, 1, n as u32),
            Type::Matrix { elem, cols, rows } => (elem, cols as u32, rows as u32),
            _ => return None,
        };
        Some(Shape {
            scalar,
            columns: columns * elements,
            rows,
        })
    }
}

/// A value written as `written_as` for a component of type `to`, as raw bits.
fn convert(text: &str, written_as: BaseType, to: Scalar) -> Option<u64> {
    match (written_as, to.base) {
        // GL converts integer attributes of float inputs to floats.
        (BaseType::Int | BaseType::Uint, BaseType::Float) => {
            let integer = parse_value(text, written_as, 64)?;
            let value = match written_as {
                BaseType::Int => integer as i64 as f64,
                _ => integer as f64,
            };
            Some(match to.bits {
                64 => value.to_bits(),
                _ => (value as f32).to_bits() as u64,
            })
        }
        _ => parse_value(text, to.base, to.bits),
    }
}

/// GL's value of a component an attribute leaves out: (0, 0, 0, 1).
fn default_component(component: usize, scalar: Scalar) -> u64 {
    match (component == 3, scalar.base, scalar.bits) {
        (false, ..) => 0,
        (true, BaseType::Float, 64) => 1f64.to_bits(),
        (true, BaseType::Float, _) => 1f32.to_bits() as u64,
        (true, ..) => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shrew_engine::ir::{Stage, Variable};

    /// Lines numbered from 1.
    fn numbered(text: &str) -> Vec<(usize, &str)> {
        text.lines().enumerate().map(|(i, l)| (i + 1, l)).collect()
    }

    fn input(shader: &mut Shader, name: &str, ty: Type) {
        shader
            .variables
            .push(Variable::new(name, Mode::ShaderIn, ty));
    }

    #[test]
    fn columns_fill_inputs_by_name_element_and_matrix_column() {
        let data = VertexData::parse(&numbered(
            "pos/float/2 m[1]/double/dmat2x2/1 m[0]/double/dmat2x2/0 m[0]/double/dmat2x2/1 \
             m[1]/double/dmat2x2/0 i/int/1\n\
             # a comment\n\
             1 2  0x4010000000000000 5  1 2  3 4  7 8  -3\n",
        ))
        .unwrap();
        let f64s = Scalar::new(BaseType::Float, 64);
        let mut shader = Shader::new(Stage::Vertex);
        input(
            &mut shader,
            "pos",
            Type::Vector(Scalar::new(BaseType::Float, 32), 4),
        );
        input(
            &mut shader,
            "m",
            Type::Array {
                elem: Box::new(Type::Matrix {
                    elem: f64s,
                    cols: 2,
                    rows: 2,
                }),
                len: 2,
                stride: 0,
            },
        );
        input(
            &mut shader,
            "i",
            Type::Scalar(Scalar::new(BaseType::Float, 32)),
        );
        let inputs = data.inputs(0..1, &shader).unwrap();
        let floats = |v: &[f32]| v.iter().map(|x| x.to_bits() as u64).collect::<Vec<_>>();
        assert_eq!(inputs["pos"][0], floats(&[1.0, 2.0, 0.0, 1.0]));
        let doubles: Vec<u64> = [1.0f64, 2.0, 3.0, 4.0, 7.0, 8.0, 4.0, 5.0]
            .iter()
            .map(|x| x.to_bits())
            .collect();
        assert_eq!(inputs["m"][0], doubles);
        // An integer written for a float input is converted.
        assert_eq!(inputs["i"][0], floats(&[-3.0]));
        assert!(data.inputs(0..2, &shader).unwrap_err().contains("has 1"));
    }

    #[test]
    fn bad_sections_have_lines() {
        let e = VertexData::parse(&numbered("pos/float/2\n1 2 3\n")).unwrap_err();
        assert_eq!(e.line(), 2, "{e}");
        let e = VertexData::parse(&numbered("\npos/quaternion/2\n")).unwrap_err();
        assert_eq!(e.line(), 2, "{e}");
        assert!(VertexData::parse(&[]).unwrap().rows.is_empty());
    }
}
