#version 450
// Doubles, conversions between floats and integers, packing and a matrix inverse.
layout(location = 0) in vec4 v;
layout(location = 0) out uvec4 result;

void main() {
    double d = double(v.x) * double(v.y);
    mat2 m = inverse(mat2(v.xy, v.zw) + mat2(2.0));
    uint packed = packHalf2x16(m[0]) ^ packUnorm4x8(v);
    ivec2 parts = ivec2(floatBitsToInt(float(d)), int(round(v.z * 100.0)));
    result = uvec4(packed, uint(parts.x), uint(abs(parts.y)), bitfieldExtract(packed, 3, 7));
}
