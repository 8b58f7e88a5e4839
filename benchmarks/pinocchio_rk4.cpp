// Pinocchio's ABA stepped by RK4 in C++, one sample after the other on one thread: the compiled peer of
// ``tumble bench multibody`` (benchmarks/bench_multibody.py, class PinocchioCpp), the same loop as its
// Python peer (class Pinocchio) without the interpreter between the calls.
//
// Input (stdin, little-endian float64 throughout, written by bench_multibody.PinocchioCpp):
//   n                                   links (link 0: the free-floating base; 1..n-1: revolute joints)
//   per link: parent, kind (0 free, 1 revolute), mass, com[3], inertia[9] (about the CoM, row-major),
//             axis[3], offset[3]        the tree_spec columns of bench_multibody.arm()
//   samples, steps, dt, aligned         aligned != 0: a revolute joint whose axis is x, y or z is a
//                                       JointModelRX/RY/RZ, else (and for any other axis) JointModelRevoluteUnaligned
//   q0[nq]                              Pinocchio's configuration (base x y z, quaternion x y z w, joint angles)
//   v0[samples][nv]                     each sample's velocity (base linear, angular; joint rates)
// Gravity is zero, the torques are zero. Per step: four pinocchio::aba calls and pinocchio::integrate for
// the configuration, exactly as the Python peer:
//   a1 = f(q, v);  a2 = f(q (+) h/2 v, v + h/2 a1);  a3 = f(q (+) h/2 v2, v + h/2 a2);  a4 = f(q (+) h v3, v + h a3)
//   q <- q (+) h/6 (v + 2 v2 + 2 v3 + v4);  v <- v + h/6 (a1 + 2 a2 + 2 a3 + a4)
// Timed with std::chrono::steady_clock: the stepping of all samples only (model, data and input untimed).
// Output (stdout): one JSON line with seconds, steps_per_s (samples * steps / seconds), samples, steps,
// nq, nv, the final q and v of sample 0 and a checksum over all samples' final q.
#include <pinocchio/algorithm/aba.hpp>
#include <pinocchio/algorithm/joint-configuration.hpp>
#include <pinocchio/multibody.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

double read1(std::FILE* f) {
  double x;
  if (std::fread(&x, sizeof x, 1, f) != 1) throw std::runtime_error("short input");
  return x;
}

void read(std::FILE* f, double* x, std::size_t n) {
  if (std::fread(x, sizeof *x, n, f) != n) throw std::runtime_error("short input");
}

void print_vec(const char* name, const Eigen::VectorXd& x) {
  std::printf("\"%s\": [", name);
  for (Eigen::Index i = 0; i < x.size(); ++i) std::printf("%s%.17g", i ? ", " : "", x[i]);
  std::printf("]");
}

}  // namespace

int main() try {
  using pinocchio::SE3;
  std::FILE* in = stdin;
  const int n = static_cast<int>(read1(in));
  pinocchio::Model model;
  std::vector<pinocchio::JointIndex> ids(n);
  struct Link { int parent, kind; double mass, com[3], inertia[9], axis[3], offset[3]; };
  std::vector<Link> links(n);
  for (auto& l : links) {
    l.parent = static_cast<int>(read1(in));
    l.kind = static_cast<int>(read1(in));
    l.mass = read1(in);
    read(in, l.com, 3);
    read(in, l.inertia, 9);
    read(in, l.axis, 3);
    read(in, l.offset, 3);
  }
  const long samples = static_cast<long>(read1(in));
  const long steps = static_cast<long>(read1(in));
  const double h = read1(in);
  const bool aligned = read1(in) != 0.0;
  for (int k = 0; k < n; ++k) {
    const Link& l = links[k];
    const pinocchio::JointIndex parent = l.parent < 0 ? 0 : ids[l.parent];
    const SE3 place(Eigen::Matrix3d::Identity(), Eigen::Vector3d(l.offset[0], l.offset[1], l.offset[2]));
    const std::string name = k == 0 ? "base" : "j" + std::to_string(k);
    const Eigen::Vector3d axis(l.axis[0], l.axis[1], l.axis[2]);
    if (l.kind == 0) {
      ids[k] = model.addJoint(parent, pinocchio::JointModelFreeFlyer(), place, name);
    } else if (aligned && axis == Eigen::Vector3d::UnitX()) {
      ids[k] = model.addJoint(parent, pinocchio::JointModelRX(), place, name);
    } else if (aligned && axis == Eigen::Vector3d::UnitY()) {
      ids[k] = model.addJoint(parent, pinocchio::JointModelRY(), place, name);
    } else if (aligned && axis == Eigen::Vector3d::UnitZ()) {
      ids[k] = model.addJoint(parent, pinocchio::JointModelRZ(), place, name);
    } else {
      ids[k] = model.addJoint(parent, pinocchio::JointModelRevoluteUnaligned(axis), place, name);
    }
    const Eigen::Matrix3d I = Eigen::Map<const Eigen::Matrix<double, 3, 3, Eigen::RowMajor>>(l.inertia);
    model.appendBodyToJoint(ids[k], pinocchio::Inertia(l.mass, Eigen::Vector3d(l.com[0], l.com[1], l.com[2]), I),
                            SE3::Identity());
  }
  model.gravity.linear().setZero();
  pinocchio::Data data(model);
  const int nq = model.nq, nv = model.nv;
  Eigen::VectorXd q0(nq);
  read(in, q0.data(), nq);
  std::vector<Eigen::VectorXd> v0(samples, Eigen::VectorXd(nv));
  for (auto& v : v0) read(in, v.data(), nv);

  // aba on Eigen::Ref<const VectorXd> and integrate on VectorXd: the argument types of the instantiations in
  // libpinocchio_default (the ones the Python bindings call), used when compiled with
  // PINOCCHIO_ENABLE_TEMPLATE_INSTANTIATION; without it the same templates are compiled here from the headers
  using CRef = Eigen::Ref<const Eigen::VectorXd>;
  const Eigen::VectorXd tau = Eigen::VectorXd::Zero(nv);
  Eigen::VectorXd q(nq), v(nv), qi(nq), dq(nv), vi(nv), v2(nv), v3(nv), a1(nv), a2(nv), a3(nv), a4(nv);
  Eigen::VectorXd q_first(nq), v_first(nv);
  double checksum = 0.0;
  const auto t0 = std::chrono::steady_clock::now();
  for (long s = 0; s < samples; ++s) {
    q = q0;
    v = v0[s];
    for (long i = 0; i < steps; ++i) {
      a1 = pinocchio::aba(model, data, CRef(q), CRef(v), CRef(tau));
      v2.noalias() = v + (0.5 * h) * a1;
      dq.noalias() = (0.5 * h) * v;
      pinocchio::integrate(model, q, dq, qi);
      a2 = pinocchio::aba(model, data, CRef(qi), CRef(v2), CRef(tau));
      v3.noalias() = v + (0.5 * h) * a2;
      dq.noalias() = (0.5 * h) * v2;
      pinocchio::integrate(model, q, dq, qi);
      a3 = pinocchio::aba(model, data, CRef(qi), CRef(v3), CRef(tau));
      vi.noalias() = v + h * a3;                                    // v4
      dq.noalias() = h * v3;
      pinocchio::integrate(model, q, dq, qi);
      a4 = pinocchio::aba(model, data, CRef(qi), CRef(vi), CRef(tau));
      dq.noalias() = (h / 6.0) * (v + 2.0 * v2 + 2.0 * v3 + vi);
      pinocchio::integrate(model, q, dq, qi);
      q = qi;
      v.noalias() += (h / 6.0) * (a1 + 2.0 * a2 + 2.0 * a3 + a4);
    }
    if (s == 0) {
      q_first = q;
      v_first = v;
    }
    checksum += q.sum();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("{\"seconds\": %.9g, \"steps_per_s\": %.9g, \"samples\": %ld, \"steps\": %ld, \"dt\": %.17g, "
              "\"nq\": %d, \"nv\": %d, \"aligned\": %s, \"checksum\": %.17g, ",
              seconds, samples * steps / seconds, samples, steps, h, nq, nv, aligned ? "true" : "false", checksum);
  print_vec("q", q_first);
  std::printf(", ");
  print_vec("v", v_first);
  std::printf("}\n");
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "pinocchio_rk4: %s\n", e.what());
  return 1;
}
