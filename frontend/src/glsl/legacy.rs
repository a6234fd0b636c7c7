//! The legacy rewrite: GLSL 1.10/1.20/1.30 (and ES 1.00) shaders made acceptable to glslang's
//! SPIR-V generation, which refuses desktop GLSL below 1.40 / 3.30 and everything of the
//! compatibility profile.
//!
//! [`rewrite_legacy`] works on tokens (see [`super::lexer`]), so comments and identifiers that
//! merely contain a built-in's name are left alone. It
//!
//! - turns `attribute` into `in` and `varying` into `out` (vertex shader) or `in` (fragment
//!   shader);
//! - replaces the compatibility-profile built-ins by user variables declared right after the
//!   `#version` line (see [`LegacyInterface`] and the naming contract below);
//! - renames the old texture functions (`texture2D`, `shadow2DProj`, `texture2DLod`,
//!   `texture2DGradARB`, ...) to their GLSL 1.30 names, wrapping the shadow ones in `vec4(...)`
//!   since `texture(sampler2DShadow, ...)` returns a float where `shadow2D` returned a vec4;
//! - expands `ftransform()` to `(shrew_ModelViewProjectionMatrix * piglit_vertex)`;
//! - renames what the shader declares under a name that later versions (or Vulkan GLSL, which
//!   glslang's `-V` implies) claim, such as `float lowp;`, `sampler2D sampler;` or its own
//!   `vec4 abs(vec4)` (which GLSL 1.10 allows), to `shrew_user_<name>` from the declaration on;
//! - sets `#version` to 330 (430 for compute shaders; a higher desktop version is kept).
//!
//! The declarations go on one line after `#version`, followed by a `#line` directive, so
//! glslang's line numbers in diagnostics still match the original source.
//!
//! # Naming contract
//!
//! | built-in | stage | becomes | kind |
//! |---|---|---|---|
//! | `gl_Vertex` | vertex | `piglit_vertex` (vec4) | input: piglit's rectangle vertices |
//! | `gl_Color`, `gl_SecondaryColor` | vertex | `shrew_attr_Color`, `shrew_attr_SecondaryColor` (vec4) | input |
//! | `gl_Normal` | vertex | `shrew_attr_Normal` (vec3) | input |
//! | `gl_MultiTexCoord0`..`7` | vertex | `shrew_attr_MultiTexCoord0`..`7` (vec4) | input |
//! | `gl_FogCoord` | vertex | `shrew_attr_FogCoord` (float) | input |
//! | `gl_FrontColor` / `gl_Color` | vertex / fragment | `shrew_Color` (vec4) | varying |
//! | `gl_FrontSecondaryColor` / `gl_SecondaryColor` | vertex / fragment | `shrew_SecondaryColor` (vec4) | varying |
//! | `gl_BackColor`, `gl_BackSecondaryColor` | vertex | `shrew_BackColor`, `shrew_BackSecondaryColor` (vec4) | varying |
//! | `gl_TexCoord` | vertex and fragment | `shrew_TexCoord` (vec4\[8\]) | varying |
//! | `gl_FogFragCoord` | vertex and fragment | `shrew_FogFragCoord` (float) | varying |
//! | `gl_ClipVertex` | vertex | `shrew_ClipVertex` (vec4) | varying nothing reads (user clipping is lost) |
//! | `gl_FragColor` | fragment | `shrew_FragColor` (vec4, location 0) | output: colour 0 |
//! | `gl_FragData` | fragment | `shrew_FragData` (vec4\[8\], locations 0..7) | output: colours 0..7 |
//! | `gl_ModelViewMatrix`, `gl_ProjectionMatrix`, `gl_ModelViewProjectionMatrix`, `gl_TextureMatrix` (mat4\[8\]) and their `Inverse`, `Transpose`, `InverseTranspose` forms | any | `shrew_` + the name without `gl_` | uniform, identity by default |
//! | `gl_NormalMatrix` | any | `shrew_NormalMatrix` (mat3) | uniform, identity by default |
//! | `gl_NormalScale` | any | `shrew_NormalScale` (float) | uniform, 1.0 by default |
//!
//! Inputs and varyings get no explicit location (glslang's `--aml` assigns them; the runner
//! links them by name, and an explicit location would collide with the ones `--aml` picks for
//! the shader's own attributes).

/// What the rewrite puts before an identifier later GLSL reserves or declares as a built-in
/// (`sampler` becomes `shrew_user_sampler`).
pub const RENAMED_PREFIX: &str = "shrew_user_";
use super::lexer::{Token, TokenKind, directive_name, tokenize};
use super::{GlslVersion, declared_version};
use shrew_engine::ir::Stage;

/// What the rewrite introduced in place of compatibility-profile built-ins, so that a runner
/// can feed and read the rewritten shader as the fixed-function pipeline would have.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LegacyInterface {
    /// Vertex attributes (vertex shaders only): `piglit_vertex` for `gl_Vertex`,
    /// `shrew_attr_Color` for `gl_Color`, ...
    pub inputs: Vec<LegacyVariable>,
    /// Varyings: outputs of a vertex shader, inputs of a fragment shader. A vertex shader's
    /// `gl_FrontColor` and a fragment shader's `gl_Color` get the same name (`shrew_Color`),
    /// so linking the two stages by name connects them.
    pub varyings: Vec<LegacyVariable>,
    /// Uniforms replacing the fixed-function matrices, with the values they have by default.
    pub uniforms: Vec<LegacyUniform>,
    /// Fragment shader colour outputs (`shrew_FragColor` at location 0, or `shrew_FragData`).
    pub outputs: Vec<LegacyVariable>,
}

impl LegacyInterface {
    /// Whether the rewrite introduced nothing (it may still have changed `#version`, keywords
    /// or texture function names).
    pub fn is_empty(&self) -> bool {
        self.inputs.is_empty()
            && self.varyings.is_empty()
            && self.uniforms.is_empty()
            && self.outputs.is_empty()
    }

    /// Adds what `other` (another compilation unit's rewrite) introduced and this lacks.
    pub fn merge(&mut self, other: LegacyInterface) {
        fn add<T: PartialEq>(to: &mut Vec<T>, from: Vec<T>) {
            for item in from {
                if !to.contains(&item) {
                    to.push(item);
                }
            }
        }
        add(&mut self.inputs, other.inputs);
        add(&mut self.varyings, other.varyings);
        add(&mut self.uniforms, other.uniforms);
        add(&mut self.outputs, other.outputs);
    }

    /// The interface variable that replaces the built-in `builtin` (e.g. `"gl_FragColor"`).
    pub fn replacement_of(&self, builtin: &str) -> Option<&LegacyVariable> {
        self.inputs
            .iter()
            .chain(&self.varyings)
            .chain(&self.outputs)
            .find(|variable| variable.replaces == builtin)
    }
}

/// An input, varying or output variable introduced by the legacy rewrite.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LegacyVariable {
    /// Its name in the rewritten shader.
    pub name: &'static str,
    /// The built-in it replaces.
    pub replaces: &'static str,
    /// Its GLSL type (`vec4`, `vec3`, `float`); arrays have [`array_length`](Self::array_length).
    pub glsl_type: &'static str,
    /// The array length, for `shrew_TexCoord` and `shrew_FragData`.
    pub array_length: Option<u32>,
    /// The explicit location (fragment outputs only; the others are assigned by glslang).
    pub location: Option<u32>,
    /// Whether the shader itself declared the variable (it redeclared the built-in, or already
    /// had a `piglit_vertex` attribute), so the rewrite only renamed it.
    pub declared_by_shader: bool,
}

/// A uniform introduced by the legacy rewrite in place of fixed-function state.
#[derive(Clone, Debug, PartialEq)]
pub struct LegacyUniform {
    /// Its name in the rewritten shader.
    pub name: &'static str,
    /// The built-in it replaces.
    pub replaces: &'static str,
    /// Its GLSL type (`mat4`, `mat3`, `float`).
    pub glsl_type: &'static str,
    /// The array length (`shrew_TextureMatrix*`).
    pub array_length: Option<u32>,
    /// The value the fixed-function state has by default, column-major and element after
    /// element for arrays: identity matrices, 1.0 for `gl_NormalScale`.
    pub default_value: Vec<f32>,
}

/// How a built-in is replaced.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Role {
    Input,
    Varying,
    Uniform,
    Output,
}

/// One row of the naming contract.
struct Replacement {
    builtin: &'static str,
    /// The stage it applies to; `None` for every stage.
    stage: Option<Stage>,
    name: &'static str,
    role: Role,
    glsl_type: &'static str,
    array_length: Option<u32>,
}

const fn replacement(
    builtin: &'static str,
    stage: Option<Stage>,
    name: &'static str,
    role: Role,
    glsl_type: &'static str,
    array_length: Option<u32>,
) -> Replacement {
    Replacement {
        builtin,
        stage,
        name,
        role,
        glsl_type,
        array_length,
    }
}

/// `gl_MaxTextureCoords` and `gl_MaxDrawBuffers` in Mesa: the lengths of the `gl_TexCoord` and
/// `gl_FragData` replacements.
const TEXTURE_COORDS: u32 = 8;
const DRAW_BUFFERS: u32 = 8;

const VS: Option<Stage> = Some(Stage::Vertex);
const FS: Option<Stage> = Some(Stage::Fragment);
const ANY: Option<Stage> = None;

/// The naming contract (see the module documentation), in declaration order.
#[rustfmt::skip]
const REPLACEMENTS: &[Replacement] = &[
    replacement("gl_Vertex", VS, "piglit_vertex", Role::Input, "vec4", None),
    replacement("gl_Color", VS, "shrew_attr_Color", Role::Input, "vec4", None),
    replacement("gl_SecondaryColor", VS, "shrew_attr_SecondaryColor", Role::Input, "vec4", None),
    replacement("gl_Normal", VS, "shrew_attr_Normal", Role::Input, "vec3", None),
    replacement("gl_MultiTexCoord0", VS, "shrew_attr_MultiTexCoord0", Role::Input, "vec4", None),
    replacement("gl_MultiTexCoord1", VS, "shrew_attr_MultiTexCoord1", Role::Input, "vec4", None),
    replacement("gl_MultiTexCoord2", VS, "shrew_attr_MultiTexCoord2", Role::Input, "vec4", None),
    replacement("gl_MultiTexCoord3", VS, "shrew_attr_MultiTexCoord3", Role::Input, "vec4", None),
    replacement("gl_MultiTexCoord4", VS, "shrew_attr_MultiTexCoord4", Role::Input, "vec4", None),
    replacement("gl_MultiTexCoord5", VS, "shrew_attr_MultiTexCoord5", Role::Input, "vec4", None),
    replacement("gl_MultiTexCoord6", VS, "shrew_attr_MultiTexCoord6", Role::Input, "vec4", None),
    replacement("gl_MultiTexCoord7", VS, "shrew_attr_MultiTexCoord7", Role::Input, "vec4", None),
    replacement("gl_FogCoord", VS, "shrew_attr_FogCoord", Role::Input, "float", None),
    replacement("gl_FrontColor", VS, "shrew_Color", Role::Varying, "vec4", None),
    replacement("gl_FrontSecondaryColor", VS, "shrew_SecondaryColor", Role::Varying, "vec4", None),
    replacement("gl_BackColor", VS, "shrew_BackColor", Role::Varying, "vec4", None),
    replacement("gl_BackSecondaryColor", VS, "shrew_BackSecondaryColor", Role::Varying, "vec4", None),
    replacement("gl_ClipVertex", VS, "shrew_ClipVertex", Role::Varying, "vec4", None),
    replacement("gl_Color", FS, "shrew_Color", Role::Varying, "vec4", None),
    replacement("gl_SecondaryColor", FS, "shrew_SecondaryColor", Role::Varying, "vec4", None),
    replacement("gl_TexCoord", VS, "shrew_TexCoord", Role::Varying, "vec4", Some(TEXTURE_COORDS)),
    replacement("gl_TexCoord", FS, "shrew_TexCoord", Role::Varying, "vec4", Some(TEXTURE_COORDS)),
    replacement("gl_FogFragCoord", VS, "shrew_FogFragCoord", Role::Varying, "float", None),
    replacement("gl_FogFragCoord", FS, "shrew_FogFragCoord", Role::Varying, "float", None),
    replacement("gl_FragColor", FS, "shrew_FragColor", Role::Output, "vec4", None),
    replacement("gl_FragData", FS, "shrew_FragData", Role::Output, "vec4", Some(DRAW_BUFFERS)),
    replacement("gl_ModelViewMatrix", ANY, "shrew_ModelViewMatrix", Role::Uniform, "mat4", None),
    replacement("gl_ProjectionMatrix", ANY, "shrew_ProjectionMatrix", Role::Uniform, "mat4", None),
    replacement("gl_ModelViewProjectionMatrix", ANY, "shrew_ModelViewProjectionMatrix", Role::Uniform, "mat4", None),
    replacement("gl_TextureMatrix", ANY, "shrew_TextureMatrix", Role::Uniform, "mat4", Some(TEXTURE_COORDS)),
    replacement("gl_ModelViewMatrixInverse", ANY, "shrew_ModelViewMatrixInverse", Role::Uniform, "mat4", None),
    replacement("gl_ProjectionMatrixInverse", ANY, "shrew_ProjectionMatrixInverse", Role::Uniform, "mat4", None),
    replacement("gl_ModelViewProjectionMatrixInverse", ANY, "shrew_ModelViewProjectionMatrixInverse", Role::Uniform, "mat4", None),
    replacement("gl_TextureMatrixInverse", ANY, "shrew_TextureMatrixInverse", Role::Uniform, "mat4", Some(TEXTURE_COORDS)),
    replacement("gl_ModelViewMatrixTranspose", ANY, "shrew_ModelViewMatrixTranspose", Role::Uniform, "mat4", None),
    replacement("gl_ProjectionMatrixTranspose", ANY, "shrew_ProjectionMatrixTranspose", Role::Uniform, "mat4", None),
    replacement("gl_ModelViewProjectionMatrixTranspose", ANY, "shrew_ModelViewProjectionMatrixTranspose", Role::Uniform, "mat4", None),
    replacement("gl_TextureMatrixTranspose", ANY, "shrew_TextureMatrixTranspose", Role::Uniform, "mat4", Some(TEXTURE_COORDS)),
    replacement("gl_ModelViewMatrixInverseTranspose", ANY, "shrew_ModelViewMatrixInverseTranspose", Role::Uniform, "mat4", None),
    replacement("gl_ProjectionMatrixInverseTranspose", ANY, "shrew_ProjectionMatrixInverseTranspose", Role::Uniform, "mat4", None),
    replacement("gl_ModelViewProjectionMatrixInverseTranspose", ANY, "shrew_ModelViewProjectionMatrixInverseTranspose", Role::Uniform, "mat4", None),
    replacement("gl_TextureMatrixInverseTranspose", ANY, "shrew_TextureMatrixInverseTranspose", Role::Uniform, "mat4", Some(TEXTURE_COORDS)),
    replacement("gl_NormalMatrix", ANY, "shrew_NormalMatrix", Role::Uniform, "mat3", None),
    replacement("gl_NormalScale", ANY, "shrew_NormalScale", Role::Uniform, "float", None),
];

/// What `ftransform()` becomes.
const FTRANSFORM_EXPANSION: &str = "(shrew_ModelViewProjectionMatrix * piglit_vertex)";

/// Names that old GLSL leaves to the shader but that later versions claim as keywords, types
/// or built-in functions, with the version that claims them. A legacy shader that declares
/// one (`float lowp;`, `float round(float x)`) gets it renamed to `shrew_user_<name>`.
#[rustfmt::skip]
const CLAIMED_NAMES: &[(&str, u32)] = &[
    ("centroid", 120), ("invariant", 120), ("lowp", 120), ("mediump", 120), ("highp", 120),
    ("precision", 120), ("transpose", 120), ("outerProduct", 120),
    ("mat2x2", 120), ("mat2x3", 120), ("mat2x4", 120), ("mat3x2", 120), ("mat3x3", 120),
    ("mat3x4", 120), ("mat4x2", 120), ("mat4x3", 120), ("mat4x4", 120),
    ("uint", 130), ("uvec2", 130), ("uvec3", 130), ("uvec4", 130), ("flat", 130),
    ("smooth", 130), ("noperspective", 130), ("layout", 130),
    ("sampler1DArray", 130), ("sampler2DArray", 130), ("sampler1DArrayShadow", 130),
    ("sampler2DArrayShadow", 130), ("samplerCubeShadow", 130),
    ("isampler1D", 130), ("isampler2D", 130), ("isampler3D", 130), ("isamplerCube", 130),
    ("isampler1DArray", 130), ("isampler2DArray", 130), ("usampler1D", 130),
    ("usampler2D", 130), ("usampler3D", 130), ("usamplerCube", 130),
    ("usampler1DArray", 130), ("usampler2DArray", 130),
    ("texture", 130), ("textureProj", 130), ("textureLod", 130), ("textureOffset", 130),
    ("textureProjOffset", 130), ("textureLodOffset", 130), ("textureProjLod", 130),
    ("textureProjLodOffset", 130), ("texelFetch", 130), ("texelFetchOffset", 130),
    ("textureGrad", 130), ("textureGradOffset", 130), ("textureProjGrad", 130),
    ("textureProjGradOffset", 130), ("textureSize", 130),
    ("sinh", 130), ("cosh", 130), ("tanh", 130), ("asinh", 130), ("acosh", 130),
    ("atanh", 130), ("trunc", 130), ("round", 130), ("roundEven", 130), ("modf", 130),
    ("isnan", 130), ("isinf", 130),
    ("inverse", 140), ("samplerBuffer", 140), ("isamplerBuffer", 140),
    ("usamplerBuffer", 140), ("isampler2DRect", 140), ("usampler2DRect", 140),
    ("determinant", 150), ("sampler2DMS", 150), ("isampler2DMS", 150), ("usampler2DMS", 150),
    ("sampler2DMSArray", 150), ("isampler2DMSArray", 150), ("usampler2DMSArray", 150),
    ("floatBitsToInt", 330), ("floatBitsToUint", 330), ("intBitsToFloat", 330),
    ("uintBitsToFloat", 330),
    // Keywords of the GLSL 4.x versions the cascade also compiles rewritten shaders as.
    ("patch", 400), ("sample", 400), ("subroutine", 400), ("precise", 400),
    ("dvec2", 400), ("dvec3", 400), ("dvec4", 400), ("dmat2", 400), ("dmat3", 400),
    ("dmat4", 400), ("coherent", 420), ("restrict", 420), ("readonly", 420),
    ("writeonly", 420), ("buffer", 430), ("shared", 430),
    // Types of Vulkan GLSL (GL_KHR_vulkan_glsl), which glslang's `-V` always enables.
    ("sampler", 0), ("samplerShadow", 0), ("texture1D", 0), ("texture2D", 0),
    ("texture3D", 0), ("textureCube", 0), ("texture2DRect", 0), ("texture1DArray", 0),
    ("texture2DArray", 0), ("textureBuffer", 0), ("texture2DMS", 0),
    ("texture2DMSArray", 0), ("textureCubeArray", 0), ("subpassInput", 0),
    ("subpassInputMS", 0),
];

/// The built-in functions of GLSL 1.10 (but the texture lookups, which the rewrite renames).
/// GLSL 1.10 lets a shader redefine them, which hides every built-in overload of the name in
/// that shader; later versions refuse it, so the rewrite renames such definitions (and the
/// calls) to `shrew_user_<name>`, which keeps the 1.10 meaning.
#[rustfmt::skip]
const GLSL_110_FUNCTIONS: &[&str] = &[
    "radians", "degrees", "sin", "cos", "tan", "asin", "acos", "atan", "pow", "exp", "log",
    "exp2", "log2", "sqrt", "inversesqrt", "abs", "sign", "floor", "ceil", "fract", "mod",
    "min", "max", "clamp", "mix", "step", "smoothstep", "length", "distance", "dot", "cross",
    "normalize", "faceforward", "reflect", "refract", "matrixCompMult", "lessThan",
    "lessThanEqual", "greaterThan", "greaterThanEqual", "equal", "notEqual", "any", "all",
    "not", "dFdx", "dFdy", "fwidth", "noise1", "noise2", "noise3", "noise4", "ftransform",
];

/// Whether `name` is claimed in GLSL `version` (see [`CLAIMED_NAMES`]).
fn is_claimed_after(name: &str, version: u32) -> bool {
    CLAIMED_NAMES
        .iter()
        .any(|&(claimed, since)| claimed == name && (since == 0 || since > version))
}

/// Whether a declaration's name can follow `token`: a built-in type, `void` or `struct`.
fn is_declarator(token: &Token) -> bool {
    token.kind == TokenKind::Identifier
        && (is_basic_type_name(token.text)
            || matches!(token.text, "void" | "struct")
            || ["sampler", "isampler", "usampler"]
                .iter()
                .any(|prefix| token.text.starts_with(prefix)))
}

/// The declarations a legacy shader makes of names that [`rewrite_legacy`] has to rename (see
/// [`CLAIMED_NAMES`] and [`GLSL_110_FUNCTIONS`]): the index in `tokens` of the declared name,
/// and the name, in source order. Names of 1.10 built-in functions count only when they
/// declare a function (a variable may shadow a function in every version).
fn declarations_to_rename<'a>(tokens: &[Token<'a>], source_version: u32) -> Vec<(usize, &'a str)> {
    let mut previous: Option<&Token> = None;
    let mut declarations = Vec::new();
    for (index, token) in tokens.iter().enumerate() {
        if !token.is_significant() {
            continue;
        }
        let declared = token.kind == TokenKind::Identifier && previous.is_some_and(is_declarator);
        if declared {
            let declares_function =
                next_significant(tokens, index).is_some_and(|i| tokens[i].is_punct('('));
            if is_claimed_after(token.text, source_version)
                || (declares_function && GLSL_110_FUNCTIONS.contains(&token.text))
            {
                declarations.push((index, token.text));
            }
        }
        previous = Some(token);
    }
    declarations
}

/// Index in [`REPLACEMENTS`] of the replacement of `builtin` in `stage`.
fn replacement_index(builtin: &str, stage: Stage) -> Option<usize> {
    REPLACEMENTS
        .iter()
        .position(|r| r.builtin == builtin && r.stage.is_none_or(|s| s == stage))
}

/// The version a rewritten shader declares: 330 (430 for compute), or the original desktop
/// version when it is higher.
pub(crate) fn rewritten_version(source: &str, stage: Stage) -> GlslVersion {
    let minimum = if stage == Stage::Compute { 430 } else { 330 };
    let number = match declared_version(source) {
        Some(declared) if !declared.version.es => declared.version.number.max(minimum),
        _ => minimum,
    };
    GlslVersion::desktop(number)
}

/// Whether `source` needs [`rewrite_legacy`] to get through glslang: its version is below
/// what SPIR-V generation accepts (desktop < 3.30, ES 1.00, no `#version` at all), it asks for
/// the compatibility profile, or it uses a keyword or built-in the rewrite replaces.
pub(crate) fn needs_legacy_rewrite(source: &str, stage: Stage) -> bool {
    let old_version = match declared_version(source) {
        None => true,
        Some(declared) => {
            declared.compatibility
                || if declared.version.es {
                    declared.version.number < 300
                } else {
                    declared.version.number < 330
                }
        }
    };
    old_version
        || tokenize(source).iter().any(|token| {
            token.kind == TokenKind::Identifier
                && (matches!(token.text, "attribute" | "varying" | "ftransform")
                    || replacement_index(token.text, stage).is_some()
                    || modern_texture_function(token.text).is_some())
        })
}

/// The GLSL 1.30 name of an old texture lookup function, and whether it is a shadow lookup
/// (whose new form returns a float instead of a vec4): `texture2D` → `texture`,
/// `shadow2DProjLod` → `textureProjLod` (shadow), `texture2DGradARB` → `textureGrad`.
fn modern_texture_function(name: &str) -> Option<(&'static str, bool)> {
    let (rest, shadow) = match (name.strip_prefix("texture"), name.strip_prefix("shadow")) {
        (Some(rest), _) => (rest, false),
        (_, Some(rest)) => (rest, true),
        _ => return None,
    };
    const DIMENSIONS: [&str; 7] = ["1DArray", "2DArray", "2DRect", "1D", "2D", "3D", "Cube"];
    let rest = DIMENSIONS
        .iter()
        .find_map(|dimension| rest.strip_prefix(dimension))?;
    let rest = rest
        .strip_suffix("ARB")
        .or_else(|| rest.strip_suffix("EXT"))
        .unwrap_or(rest);
    let (projective, rest) = match rest.strip_prefix("Proj") {
        Some(rest) => (true, rest),
        None => (false, rest),
    };
    let modern = match (projective, rest) {
        (false, "") => "texture",
        (false, "Lod") => "textureLod",
        (false, "Grad") => "textureGrad",
        (true, "") => "textureProj",
        (true, "Lod") => "textureProjLod",
        (true, "Grad") => "textureProjGrad",
        _ => return None,
    };
    Some((modern, shadow))
}

/// Whether `name` is a built-in scalar, vector or matrix type (what precedes a variable name
/// in a redeclaration such as `varying vec4 gl_TexCoord[2];`).
fn is_basic_type_name(name: &str) -> bool {
    matches!(name, "float" | "int" | "uint" | "bool" | "double")
        || ["vec", "ivec", "uvec", "bvec", "dvec"]
            .iter()
            .any(|prefix| {
                name.strip_prefix(prefix)
                    .is_some_and(|n| matches!(n, "2" | "3" | "4"))
            })
        || ["mat", "dmat"].iter().any(|prefix| {
            name.strip_prefix(prefix).is_some_and(|dims| {
                matches!(
                    dims,
                    "2" | "3"
                        | "4"
                        | "2x2"
                        | "2x3"
                        | "2x4"
                        | "3x2"
                        | "3x3"
                        | "3x4"
                        | "4x2"
                        | "4x3"
                        | "4x4"
                )
            })
        })
}

/// Index of the first significant token after `index`.
fn next_significant(tokens: &[Token], index: usize) -> Option<usize> {
    (index + 1..tokens.len()).find(|&i| tokens[i].is_significant())
}

/// Index of the `)` matching the `(` at `open`.
fn matching_close_paren(tokens: &[Token], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, token) in tokens.iter().enumerate().skip(open) {
        if token.is_punct('(') {
            depth += 1;
        } else if token.is_punct(')') {
            depth = depth.saturating_sub(1);
            if depth == 0 {
                return Some(i);
            }
        }
    }
    None
}

/// What the rewrite learnt about one row of [`REPLACEMENTS`].
#[derive(Copy, Clone, Default)]
struct ReplacementUse {
    used: bool,
    /// The shader declares the replacement itself (see [`LegacyVariable::declared_by_shader`]).
    declared_by_shader: bool,
    /// The array length the shader's own redeclaration gives (`varying vec4 gl_TexCoord[2];`).
    declared_length: Option<u32>,
}

/// The state of one [`rewrite_legacy`] run.
struct Rewriter<'a> {
    stage: Stage,
    version: GlslVersion,
    /// Every identifier of the original source, to notice a shader that declares a
    /// replacement's name itself (`attribute vec4 piglit_vertex;`).
    source_identifiers: Vec<&'a str>,
    /// Declarations of names to rename to `shrew_user_<name>` from there on (see
    /// [`declarations_to_rename`]), the next one last.
    pending_renames: Vec<(usize, &'a str)>,
    /// The names renamed from the current token on. Uses before the declaration keep their
    /// meaning: a call of a built-in function before the shader redefines it calls the
    /// built-in, as in GLSL 1.10.
    renamed: Vec<&'a str>,
    /// Indexed like [`REPLACEMENTS`].
    uses: Vec<ReplacementUse>,
    output: String,
    /// Where the `#version` directive ends in `output`, and the original line that follows it.
    after_version: Option<(usize, usize)>,
}

impl<'a> Rewriter<'a> {
    fn new(stage: Stage, source_version: u32, version: GlslVersion, tokens: &[Token<'a>]) -> Self {
        let mut source_identifiers: Vec<&str> = tokens
            .iter()
            .filter(|t| t.kind == TokenKind::Identifier)
            .map(|t| t.text)
            .collect();
        source_identifiers.sort_unstable();
        source_identifiers.dedup();
        Rewriter {
            stage,
            version,
            source_identifiers,
            pending_renames: {
                let mut declarations = declarations_to_rename(tokens, source_version);
                declarations.reverse();
                declarations
            },
            renamed: Vec::new(),
            uses: vec![ReplacementUse::default(); REPLACEMENTS.len()],
            output: String::new(),
            after_version: None,
        }
    }

    /// Records that `builtin` is used; returns its index in [`REPLACEMENTS`] if it is one
    /// the rewrite replaces in this stage.
    fn mark_used(&mut self, builtin: &str) -> Option<usize> {
        let index = replacement_index(builtin, self.stage)?;
        self.uses[index].used = true;
        if self
            .source_identifiers
            .binary_search(&REPLACEMENTS[index].name)
            .is_ok()
        {
            self.uses[index].declared_by_shader = true;
        }
        Some(index)
    }

    /// Appends the rewritten `tokens` to the output. `top_level` is false inside a
    /// preprocessor directive's body.
    fn rewrite_tokens(&mut self, tokens: &[Token], top_level: bool) {
        // How many `)` to write after each token (closing the `vec4(` around shadow lookups).
        let mut extra_close_parens = vec![0usize; tokens.len()];
        let mut previous_significant: Option<&Token> = None;
        let mut index = 0;
        while index < tokens.len() {
            let token = &tokens[index];
            while top_level
                && self
                    .pending_renames
                    .last()
                    .is_some_and(|&(at, _)| at <= index)
            {
                if let Some((_, name)) = self.pending_renames.pop() {
                    self.renamed.push(name);
                }
            }
            let mut next_index = index + 1;
            match token.kind {
                TokenKind::Directive => self.rewrite_directive(token, top_level),
                TokenKind::Identifier => {
                    next_index = self.rewrite_identifier(
                        tokens,
                        index,
                        previous_significant,
                        &mut extra_close_parens,
                    );
                }
                _ => self.output.push_str(token.text),
            }
            for _ in 0..extra_close_parens[index] {
                self.output.push(')');
            }
            if token.is_significant() {
                previous_significant = Some(token);
            }
            index = next_index;
        }
    }

    /// Rewrites the identifier at `index`; returns the index of the next token to process.
    fn rewrite_identifier(
        &mut self,
        tokens: &[Token],
        index: usize,
        previous_significant: Option<&Token>,
        extra_close_parens: &mut [usize],
    ) -> usize {
        let token = &tokens[index];
        let next = next_significant(tokens, index);
        let next_is_open_paren = next.is_some_and(|i| tokens[i].is_punct('('));
        if self.renamed.contains(&token.text) {
            self.output.push_str(RENAMED_PREFIX);
            self.output.push_str(token.text);
            return index + 1;
        }
        // `varying out` (user fragment outputs of GL_EXT_gpu_shader4) and `varying in` already
        // say the direction: `varying` goes.
        if token.text == "varying" && next.is_some_and(|i| matches!(tokens[i].text, "in" | "out")) {
            return next.unwrap_or(index + 1);
        }
        match (token.text, self.stage) {
            ("attribute", Stage::Vertex) | ("varying", Stage::Fragment) => {
                self.output.push_str("in");
                return index + 1;
            }
            ("varying", Stage::Vertex) => {
                self.output.push_str("out");
                return index + 1;
            }
            _ => {}
        }
        if token.text == "ftransform" && next_is_open_paren {
            let close = next.and_then(|open| next_significant(tokens, open));
            if let Some(close) = close.filter(|&i| tokens[i].is_punct(')')) {
                self.mark_used("gl_ModelViewProjectionMatrix");
                self.mark_used("gl_Vertex");
                self.output.push_str(FTRANSFORM_EXPANSION);
                return close + 1;
            }
        }
        if next_is_open_paren && let Some((modern, shadow)) = modern_texture_function(token.text) {
            let close = next.and_then(|open| matching_close_paren(tokens, open));
            match close {
                Some(close) if shadow => {
                    self.output.push_str("vec4(");
                    extra_close_parens[close] += 1;
                }
                _ => {}
            }
            self.output.push_str(modern);
            return index + 1;
        }
        let Some(slot) = self.mark_used(token.text) else {
            self.output.push_str(token.text);
            return index + 1;
        };
        self.output.push_str(REPLACEMENTS[slot].name);
        let redeclaration = previous_significant
            .is_some_and(|t| t.kind == TokenKind::Identifier && is_basic_type_name(t.text));
        if redeclaration {
            let declared_length = next
                .filter(|&i| tokens[i].is_punct('['))
                .and_then(|open| next_significant(tokens, open))
                .and_then(|i| tokens[i].text.parse().ok());
            let use_ = &mut self.uses[slot];
            use_.declared_by_shader = true;
            use_.declared_length = declared_length.or(use_.declared_length);
        }
        index + 1
    }

    /// Rewrites a preprocessor directive: `#version` gets the new version; the bodies of
    /// `#define`, `#if` and `#elif` are rewritten like code; the others are kept.
    fn rewrite_directive(&mut self, directive: &Token, top_level: bool) {
        let name = directive_name(directive.text);
        if name == "version" && top_level && self.after_version.is_none() {
            self.output.push_str("#version ");
            self.output.push_str(&self.version.directive());
            let resume_line = directive.line + directive.text.matches('\n').count() + 1;
            self.after_version = Some((self.output.len(), resume_line));
            return;
        }
        if matches!(name, "define" | "if" | "elif")
            && let Some(name_at) = directive.text.find(name)
        {
            let (head, body) = directive.text.split_at(name_at + name.len());
            self.output.push_str(head);
            self.rewrite_tokens(&tokenize(body), false);
            return;
        }
        self.output.push_str(directive.text);
    }

    /// The declarations of the replacements used, on one line, and the interface they form.
    fn declarations(&self) -> (String, LegacyInterface) {
        let mut declarations = Vec::new();
        let mut interface = LegacyInterface::default();
        for (replacement, use_) in REPLACEMENTS.iter().zip(&self.uses) {
            if !use_.used {
                continue;
            }
            let array_length = use_.declared_length.or(replacement.array_length);
            let array_suffix = array_length.map(|n| format!("[{n}]")).unwrap_or_default();
            let (qualifier, location) = match (replacement.role, self.stage) {
                (Role::Input, _) | (Role::Varying, Stage::Fragment) => ("in", None),
                (Role::Varying, _) => ("out", None),
                (Role::Output, _) => ("layout(location = 0) out", Some(0)),
                (Role::Uniform, _) => ("uniform", None),
            };
            if !use_.declared_by_shader {
                declarations.push(format!(
                    "{qualifier} {} {}{array_suffix};",
                    replacement.glsl_type, replacement.name
                ));
            }
            let variable = LegacyVariable {
                name: replacement.name,
                replaces: replacement.builtin,
                glsl_type: replacement.glsl_type,
                array_length,
                location,
                declared_by_shader: use_.declared_by_shader,
            };
            match replacement.role {
                Role::Input => interface.inputs.push(variable),
                Role::Varying => interface.varyings.push(variable),
                Role::Output => interface.outputs.push(variable),
                Role::Uniform => interface.uniforms.push(LegacyUniform {
                    name: replacement.name,
                    replaces: replacement.builtin,
                    glsl_type: replacement.glsl_type,
                    array_length,
                    default_value: default_uniform_value(replacement.glsl_type, array_length),
                }),
            }
        }
        (declarations.join(" "), interface)
    }
}

/// The fixed-function default of a replaced uniform: identity matrices, 1.0 for a float.
fn default_uniform_value(glsl_type: &str, array_length: Option<u32>) -> Vec<f32> {
    let element: Vec<f32> = match glsl_type {
        "mat3" => identity(3),
        "mat4" => identity(4),
        _ => vec![1.0],
    };
    let count = array_length.unwrap_or(1) as usize;
    element.repeat(count)
}

fn identity(size: usize) -> Vec<f32> {
    (0..size * size)
        .map(|i| if i % (size + 1) == 0 { 1.0 } else { 0.0 })
        .collect()
}

/// Rewrites a legacy shader into GLSL 3.30 that glslang turns into SPIR-V (see the module
/// documentation), and says what the rewrite introduced.
///
/// Never fails: what it does not understand is left as it was, for glslang to report.
pub fn rewrite_legacy(source: &str, stage: Stage) -> (String, LegacyInterface) {
    let tokens = tokenize(source);
    // Without `#version`, a shader is GLSL 1.10; ES 1.00 reserves about what 1.20 does.
    let source_version = match declared_version(source) {
        Some(declared) if declared.version.es => 120,
        Some(declared) => declared.version.number,
        None => 110,
    };
    let mut rewriter = Rewriter::new(
        stage,
        source_version,
        rewritten_version(source, stage),
        &tokens,
    );
    rewriter.rewrite_tokens(&tokens, true);
    let (declarations, interface) = rewriter.declarations();
    let mut text = rewriter.output;
    match rewriter.after_version {
        Some((offset, resume_line)) => {
            if !declarations.is_empty() {
                text.insert_str(offset, &format!("\n{declarations}\n#line {resume_line}"));
            }
        }
        None => {
            let mut prefix = format!("#version {}\n", rewriter.version.directive());
            if !declarations.is_empty() {
                prefix.push_str(&declarations);
                prefix.push('\n');
            }
            prefix.push_str("#line 1\n");
            text.insert_str(0, &prefix);
        }
    }
    (text, interface)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rewritten source's lines after the inserted declarations, which must be the
    /// original lines from the `#line` directive's number on.
    fn lines_after_line_directive(rewritten: &str) -> (usize, Vec<&str>) {
        let mut lines = rewritten.lines();
        for line in lines.by_ref() {
            if let Some(number) = line.strip_prefix("#line ") {
                return (number.parse().unwrap(), lines.collect());
            }
        }
        panic!("no #line in {rewritten}");
    }

    #[test]
    fn vertex_shader_keywords_inputs_varyings_and_matrices() {
        let source = "#version 110\nattribute vec4 weight;\nvarying vec4 color;\nvoid main() {\n  gl_Position = gl_ModelViewProjectionMatrix * gl_Vertex;\n  gl_FrontColor = gl_Color * weight;\n  gl_TexCoord[1] = gl_MultiTexCoord1;\n  color = vec4(gl_Normal, 1.0);\n}\n";
        let (rewritten, interface) = rewrite_legacy(source, Stage::Vertex);
        let (first_line, rest) = lines_after_line_directive(&rewritten);
        assert_eq!(first_line, 2);
        assert_eq!(
            rest,
            [
                "in vec4 weight;",
                "out vec4 color;",
                "void main() {",
                "  gl_Position = shrew_ModelViewProjectionMatrix * piglit_vertex;",
                "  shrew_Color = shrew_attr_Color * weight;",
                "  shrew_TexCoord[1] = shrew_attr_MultiTexCoord1;",
                "  color = vec4(shrew_attr_Normal, 1.0);",
                "}",
            ]
        );
        assert!(rewritten.starts_with("#version 330\n"));
        let declarations = rewritten.lines().nth(1).unwrap();
        assert_eq!(
            declarations,
            "in vec4 piglit_vertex; in vec4 shrew_attr_Color; in vec3 shrew_attr_Normal; \
             in vec4 shrew_attr_MultiTexCoord1; out vec4 shrew_Color; out vec4 shrew_TexCoord[8]; \
             uniform mat4 shrew_ModelViewProjectionMatrix;"
        );
        let names =
            |variables: &[LegacyVariable]| variables.iter().map(|v| v.name).collect::<Vec<_>>();
        assert_eq!(
            names(&interface.inputs),
            [
                "piglit_vertex",
                "shrew_attr_Color",
                "shrew_attr_Normal",
                "shrew_attr_MultiTexCoord1"
            ]
        );
        assert_eq!(
            names(&interface.varyings),
            ["shrew_Color", "shrew_TexCoord"]
        );
        assert_eq!(
            interface.replacement_of("gl_FrontColor").unwrap().name,
            "shrew_Color"
        );
        assert_eq!(interface.uniforms.len(), 1);
        assert_eq!(interface.uniforms[0].default_value, identity(4));
        assert!(interface.outputs.is_empty());
    }

    #[test]
    fn fragment_shader_colour_output_and_varyings() {
        let source =
            "varying vec4 v;\nvoid main() { gl_FragColor = gl_Color + gl_TexCoord[0] + v; }\n";
        let (rewritten, interface) = rewrite_legacy(source, Stage::Fragment);
        assert_eq!(
            rewritten,
            "#version 330\nin vec4 shrew_Color; in vec4 shrew_TexCoord[8]; \
             layout(location = 0) out vec4 shrew_FragColor;\n#line 1\n\
             in vec4 v;\nvoid main() { shrew_FragColor = shrew_Color + shrew_TexCoord[0] + v; }\n"
        );
        let output = &interface.outputs[0];
        assert_eq!(
            (output.name, output.location, output.replaces),
            ("shrew_FragColor", Some(0), "gl_FragColor")
        );
        // The vertex shader's gl_FrontColor and the fragment shader's gl_Color meet.
        let (_, vertex) =
            rewrite_legacy("void main() { gl_FrontColor = vec4(1.0); }", Stage::Vertex);
        assert_eq!(vertex.varyings[0].name, interface.varyings[0].name);
    }

    #[test]
    fn varying_with_a_direction_loses_varying() {
        let (rewritten, _) = rewrite_legacy(
            "#version 120\nvarying out vec4 color;\nvoid main() { color = vec4(1.0); }",
            Stage::Fragment,
        );
        assert!(rewritten.contains("\nout vec4 color;\n"), "{rewritten}");
    }

    #[test]
    fn frag_data_is_an_array_output() {
        let (rewritten, interface) = rewrite_legacy(
            "#version 120\nvoid main() { gl_FragData[1] = vec4(0.0); }",
            Stage::Fragment,
        );
        assert!(rewritten.contains("layout(location = 0) out vec4 shrew_FragData[8];"));
        assert!(rewritten.contains("shrew_FragData[1] = vec4(0.0);"));
        assert_eq!(interface.outputs[0].array_length, Some(8));
    }

    #[test]
    fn comments_and_longer_identifiers_are_left_alone() {
        let source = "#version 110\n// gl_FragColor varying\n/* texture2D(s, c) */\nuniform vec4 my_gl_FragColor;\nvoid main() { vec4 gl_FragColorX = my_gl_FragColor; gl_FragColor = gl_FragColorX; }\n";
        let (rewritten, _) = rewrite_legacy(source, Stage::Fragment);
        assert!(rewritten.contains("// gl_FragColor varying\n/* texture2D(s, c) */\n"));
        assert!(
            rewritten
                .contains("vec4 gl_FragColorX = my_gl_FragColor; shrew_FragColor = gl_FragColorX;")
        );
    }

    #[test]
    fn texture_functions() {
        let source = "uniform sampler2D s; uniform sampler2DShadow d; uniform vec4 texture2Dish;\n\
            void main() { gl_FragColor = texture2D(s, vec2(0.5)) + texture2DProjLod(s, vec3(1.0), 0.0)\n\
            + shadow2D(d, vec3(min(1.0, 2.0), 0.5, 0.5)).r + texture2DGradARB(s, vec2(0.0), vec2(1.0), vec2(1.0))\n\
            + shadow2DProj(d, vec4(1.0)) + texture2Dish; }";
        let (rewritten, _) = rewrite_legacy(source, Stage::Fragment);
        assert!(rewritten.contains("texture(s, vec2(0.5)) + textureProjLod(s, vec3(1.0), 0.0)"));
        assert!(
            rewritten
                .contains("+ vec4(texture(d, vec3(min(1.0, 2.0), 0.5, 0.5))).r + textureGrad(s,")
        );
        assert!(rewritten.contains("+ vec4(textureProj(d, vec4(1.0))) + texture2Dish;"));
        assert_eq!(
            modern_texture_function("textureCube"),
            Some(("texture", false))
        );
        assert_eq!(
            modern_texture_function("shadow1DArrayLod"),
            Some(("textureLod", true))
        );
        assert_eq!(
            modern_texture_function("texture2DRectProj"),
            Some(("textureProj", false))
        );
        assert_eq!(modern_texture_function("texture"), None);
        assert_eq!(modern_texture_function("texture2DLodOffset"), None);
    }

    #[test]
    fn ftransform_and_unbalanced_input() {
        let (rewritten, interface) =
            rewrite_legacy("void main() { gl_Position = ftransform(); }", Stage::Vertex);
        assert!(
            rewritten.contains("gl_Position = (shrew_ModelViewProjectionMatrix * piglit_vertex);")
        );
        assert_eq!(interface.inputs[0].name, "piglit_vertex");
        assert_eq!(
            interface.uniforms[0].name,
            "shrew_ModelViewProjectionMatrix"
        );
        // Unbalanced or truncated input is passed through for glslang to report.
        for source in [
            "shadow2D(",
            "ftransform(",
            "void main() { gl_FragColor = (",
            "#version",
            "#",
        ] {
            let _ = rewrite_legacy(source, Stage::Fragment);
        }
    }

    #[test]
    fn redeclared_builtins_and_existing_piglit_vertex_are_not_declared_again() {
        let source = "varying vec4 gl_TexCoord[2];\nattribute vec4 piglit_vertex;\nvoid main() { gl_Position = gl_Vertex; gl_TexCoord[1] = piglit_vertex; }";
        let (rewritten, interface) = rewrite_legacy(source, Stage::Vertex);
        assert!(rewritten.contains("out vec4 shrew_TexCoord[2];\nin vec4 piglit_vertex;"));
        assert_eq!(rewritten.matches("vec4 piglit_vertex;").count(), 1);
        let tex_coord = interface.replacement_of("gl_TexCoord").unwrap();
        assert_eq!(
            (tex_coord.array_length, tex_coord.declared_by_shader),
            (Some(2), true)
        );
        assert!(
            interface
                .replacement_of("gl_Vertex")
                .unwrap()
                .declared_by_shader
        );
    }

    #[test]
    fn names_later_versions_claim_are_renamed() {
        let source = "#version 110\nuniform sampler2D sampler;\nvoid main() { float lowp = 1.0; float mat4x2 = lowp; gl_FragColor = texture2D(sampler, vec2(mat4x2)); }";
        let (rewritten, _) = rewrite_legacy(source, Stage::Fragment);
        assert!(rewritten.contains("uniform sampler2D shrew_user_sampler;"));
        assert!(
            rewritten.contains(
                "float shrew_user_lowp = 1.0; float shrew_user_mat4x2 = shrew_user_lowp;"
            )
        );
        assert!(rewritten.contains("texture(shrew_user_sampler, vec2(shrew_user_mat4x2))"));
        // In 1.20, mat4x2 is a type.
        let (rewritten, _) = rewrite_legacy("#version 120\nuniform mat4x2 m;", Stage::Fragment);
        assert!(rewritten.contains("uniform mat4x2 m;"));
    }

    #[test]
    fn redefined_builtin_functions_are_renamed_from_their_declaration_on() {
        let source = "void main() { gl_FragColor = abs(vec4(-1.0)) + f(); }\nvec4 abs(vec4 x) { return x; }\nvec4 f() { return abs(vec4(1.0)); }\nvoid g() { float length = length(vec2(1.0)); }";
        let (rewritten, _) = rewrite_legacy(source, Stage::Fragment);
        assert!(rewritten.contains("shrew_FragColor = abs(vec4(-1.0)) + f();"));
        assert!(rewritten.contains("vec4 shrew_user_abs(vec4 x)"));
        assert!(rewritten.contains("return shrew_user_abs(vec4(1.0));"));
        // A variable may shadow a built-in function: not renamed.
        assert!(rewritten.contains("float length = length(vec2(1.0));"));
    }

    #[test]
    fn macro_bodies_are_rewritten_but_not_other_directives() {
        let source = "#version 110\n#extension GL_ARB_texture_rectangle : enable\n#define COLOR gl_FragColor\n#pragma gl_FragColor\nvoid main() { COLOR = vec4(1.0); }";
        let (rewritten, interface) = rewrite_legacy(source, Stage::Fragment);
        assert!(rewritten.contains("#define COLOR shrew_FragColor\n#pragma gl_FragColor\n"));
        assert!(rewritten.contains("#extension GL_ARB_texture_rectangle : enable\n"));
        assert_eq!(interface.outputs.len(), 1);
    }

    #[test]
    fn versions() {
        let (rewritten, interface) = rewrite_legacy(
            "#version 100\nprecision mediump float;\nvoid main() {}",
            Stage::Fragment,
        );
        assert!(rewritten.starts_with("#version 330\nprecision mediump float;"));
        assert!(interface.is_empty());
        let (rewritten, _) =
            rewrite_legacy("#version 420 compatibility\nvoid main() {}", Stage::Vertex);
        assert!(rewritten.starts_with("#version 420\n"));
        let (rewritten, _) = rewrite_legacy("void main() {}", Stage::Compute);
        assert_eq!(rewritten, "#version 430\n#line 1\nvoid main() {}");
        assert_eq!(
            rewritten_version("#version 450\n", Stage::Fragment),
            GlslVersion::desktop(450)
        );
        assert_eq!(
            rewritten_version("#version 310 es\n", Stage::Compute),
            GlslVersion::desktop(430)
        );
    }

    #[test]
    fn when_the_rewrite_is_needed() {
        assert!(needs_legacy_rewrite("void main() {}", Stage::Fragment));
        assert!(needs_legacy_rewrite(
            "#version 130\nvoid main() {}",
            Stage::Fragment
        ));
        assert!(needs_legacy_rewrite(
            "#version 100\nvoid main() {}",
            Stage::Fragment
        ));
        assert!(needs_legacy_rewrite(
            "#version 150 compatibility\nvoid main() {}",
            Stage::Fragment
        ));
        assert!(needs_legacy_rewrite(
            "#version 330\nvoid main() { gl_FragColor = vec4(0); }",
            Stage::Fragment
        ));
        assert!(!needs_legacy_rewrite(
            "#version 330\nout vec4 c; void main() { c = vec4(0); }",
            Stage::Fragment
        ));
        assert!(!needs_legacy_rewrite(
            "#version 300 es\nvoid main() {}",
            Stage::Fragment
        ));
    }

    #[test]
    fn default_values() {
        assert_eq!(
            default_uniform_value("mat3", None),
            [1., 0., 0., 0., 1., 0., 0., 0., 1.]
        );
        assert_eq!(default_uniform_value("mat4", Some(8)).len(), 128);
        assert_eq!(default_uniform_value("float", None), [1.0]);
    }
}
