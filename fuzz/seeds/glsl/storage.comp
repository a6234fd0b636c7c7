#version 450
// Storage buffers, shared memory, a barrier, atomics and integer operations.
layout(local_size_x = 8, local_size_y = 2) in;
layout(std430, binding = 0) buffer Data {
    uint counter;
    uint values[];
};
shared uint partial[16];

void main() {
    uint i = gl_LocalInvocationIndex;
    uint v = values[gl_GlobalInvocationID.x];
    partial[i] = bitCount(v) + findMSB(v | 1u) + (v >> 3) ^ (v << 5);
    barrier();
    if (i == 0u) {
        uint total = 0u;
        for (uint j = 0u; j < 16u; j++)
            total += partial[j];
        atomicAdd(counter, total);
    }
    values[gl_GlobalInvocationID.x] = uint(float(v) * 0.5) + uint(int(v) % 7);
}
