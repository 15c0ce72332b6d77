(** * The normal form of a head with biases, as torch builds it (SPEC §1.5).

    Counterpart of the sympy proof [proofs.biases.prove_bias_normal_form].

    A torch head with query and key maps W_Q, W_K (r × d), biases b_q, b_k, scale ρ, value and
    output maps W_V (d_v × d), W_O (d_o × d_v), biases b_v, b_o and a readout w has scores
    sᵗ(x) = ρ (W_K x + b_k)ᵀ(W_Q x_N + b_q) and answer
    fᵗ(X) = Σ_i αᵗ_i wᵀ(W_O (W_V x_i + b_v) + b_o).  For every nonempty X (every length N) it
    equals the head
        s(x) = xᵀ(W x_N + c),   f(X) = b + Σ_i α_i vᵀx_i,
    with W = ρ W_KᵀW_Q, c = ρ W_Kᵀb_q, v = W_VᵀW_Oᵀw and b = wᵀ(W_O b_v + b_o): the key bias
    b_k only adds to every score the same κ(x_N) = ρ b_kᵀ(W_Q x_N + b_q), which the softmax
    cancels. *)

From Coq Require Import Reals Lra List.
Import ListNotations.
From ExactAttention Require Import Defs.
Open Scope R_scope.

(** M x for a matrix with [n] columns. *)
Definition mv (n : nat) (M : mat) (x : vec) : vec := fun a => sumn n (fun j => M a j * x j).

(** The torch head: scores and values. *)
Definition torch_score (d r : nat) (rho : R) (WQ WK : mat) (bq bk : vec) (q x : vec) : R :=
  rho * dot r (vadd (mv d WK x) bk) (vadd (mv d WQ q) bq).
Definition torch_value (d dv dout : nat) (WV WO : mat) (bv bo w : vec) (x : vec) : R :=
  dot dout w (vadd (mv dv WO (vadd (mv d WV x) bv)) bo).

Definition torch_head (d r dv dout : nat) (rho : R) (WQ WK WV WO : mat) (bq bk bv bo w : vec)
    (X : list vec) : R :=
  lsum (map (fun x => exp (torch_score d r rho WQ WK bq bk (query X) x) * torch_value d dv dout WV WO bv bo w x) X)
  / lsum (map (fun x => exp (torch_score d r rho WQ WK bq bk (query X) x)) X).

(** The normal form's parameters, and the shift κ(x_N) the key bias adds to every score. *)
Definition W_nf (r : nat) (rho : R) (WQ WK : mat) : mat := fun i j => rho * sumn r (fun a => WK a i * WQ a j).
Definition c_nf (r : nat) (rho : R) (WK : mat) (bq : vec) : vec := fun i => rho * sumn r (fun a => WK a i * bq a).
Definition v_nf (dv dout : nat) (WV WO : mat) (w : vec) : vec :=
  fun j => sumn dv (fun b => WV b j * sumn dout (fun o => WO o b * w o)).
Definition b_nf (dv dout : nat) (WO : mat) (bv bo w : vec) : R := dot dout w (vadd (mv dv WO bv) bo).
Definition kappa (d r : nat) (rho : R) (WQ : mat) (bq bk : vec) (q : vec) : R :=
  rho * dot r bk (vadd (mv d WQ q) bq).

(** The head with a query bias c and an output bias b (SPEC §1.5). *)
Definition biased_attn (d : nat) (W : mat) (c v : vec) (b : R) (X : list vec) : R :=
  b + lsum (map (fun x => exp (bil d x W (query X) + dot d x c) * dot d v x) X)
      / lsum (map (fun x => exp (bil d x W (query X) + dot d x c)) X).

Lemma sumn_mult : forall n m f g, sumn n f * sumn m g = sumn n (fun i => sumn m (fun j => f i * g j)).
Proof.
  intros; rewrite Rmult_comm, <- sumn_scal_l; apply sumn_ext; intros.
  rewrite Rmult_comm, <- sumn_scal_l; apply sumn_ext; intros; ring.
Qed.

Lemma sumn3_swap : forall n m l (f : nat -> nat -> nat -> R),
  sumn n (fun a => sumn m (fun i => sumn l (fun j => f a i j)))
  = sumn m (fun i => sumn l (fun j => sumn n (fun a => f a i j))).
Proof. intros; rewrite sumn_swap; apply sumn_ext; intros; apply sumn_swap. Qed.

Lemma score_normal_form : forall d r rho WQ WK bq bk q x,
  torch_score d r rho WQ WK bq bk q x
  = bil d x (W_nf r rho WQ WK) q + dot d x (c_nf r rho WK bq) + kappa d r rho WQ bq bk q.
Proof.
  intros; unfold torch_score, kappa.
  rewrite (dot_add_l r (mv d WK x) bk), Rmult_plus_distr_l, dot_add_r, Rmult_plus_distr_l; f_equal.
  f_equal.
  - transitivity (sumn r (fun a => sumn d (fun i => sumn d (fun j => rho * (WK a i * x i) * (WQ a j * q j))))).
    + unfold dot, mv; rewrite <- sumn_scal_l; apply sumn_ext; intros a _.
      rewrite sumn_mult, <- sumn_scal_l; apply sumn_ext; intros i _.
      rewrite <- sumn_scal_l; apply sumn_ext; intros; ring.
    + rewrite sumn3_swap; unfold bil, W_nf; apply sumn_ext; intros i _; apply sumn_ext; intros j _.
      transitivity (x i * q j * (rho * sumn r (fun a => WK a i * WQ a j))); [|ring].
      rewrite <- !sumn_scal_l; apply sumn_ext; intros; ring.
  - transitivity (sumn r (fun a => sumn d (fun i => rho * (WK a i * x i) * bq a))).
    + unfold dot, mv; rewrite <- sumn_scal_l; apply sumn_ext; intros a _.
      transitivity ((rho * bq a) * sumn d (fun i => WK a i * x i)); [ring|].
      rewrite <- sumn_scal_l; apply sumn_ext; intros; ring.
    + rewrite sumn_swap; unfold dot, c_nf; apply sumn_ext; intros i _.
      transitivity ((x i * rho) * sumn r (fun a => WK a i * bq a)); [|ring].
      rewrite <- sumn_scal_l; apply sumn_ext; intros; ring.
Qed.

Lemma value_normal_form : forall d dv dout WV WO bv bo w x,
  torch_value d dv dout WV WO bv bo w x = dot d (v_nf dv dout WV WO w) x + b_nf dv dout WO bv bo w.
Proof.
  intros; unfold torch_value, b_nf.
  assert (E : dot dout w (vadd (mv dv WO (vadd (mv d WV x) bv)) bo)
              = dot dout w (mv dv WO (mv d WV x)) + dot dout w (vadd (mv dv WO bv) bo)).
  { unfold dot, vadd, mv; rewrite <- sumn_plus; apply sumn_ext; intros o _.
    rewrite (sumn_ext dv _ (fun b => WO o b * sumn d (fun j => WV b j * x j) + WO o b * bv b)) by (intros; ring).
    rewrite sumn_plus; ring. }
  rewrite E; f_equal.
  transitivity (sumn dout (fun o => sumn dv (fun b => sumn d (fun j => w o * WO o b * WV b j * x j)))).
  - unfold dot, mv; apply sumn_ext; intros o _; rewrite <- sumn_scal_l; apply sumn_ext; intros b _.
    transitivity ((w o * WO o b) * sumn d (fun j => WV b j * x j)); [ring|].
    rewrite <- sumn_scal_l; apply sumn_ext; intros; ring.
  - rewrite sumn3_swap, sumn_swap; unfold dot, v_nf; apply sumn_ext; intros j _.
    rewrite Rmult_comm, <- sumn_scal_l; apply sumn_ext; intros b _.
    transitivity ((x j * WV b j) * sumn dout (fun o => WO o b * w o)); [|ring].
    rewrite <- sumn_scal_l; apply sumn_ext; intros; ring.
Qed.

Theorem bias_normal_form : forall d r dv dout rho WQ WK WV WO bq bk bv bo w (X : list vec), X <> [] ->
  torch_head d r dv dout rho WQ WK WV WO bq bk bv bo w X
  = biased_attn d (W_nf r rho WQ WK) (c_nf r rho WK bq) (v_nf dv dout WV WO w) (b_nf dv dout WO bv bo w) X.
Proof.
  intros d r dv dout rho WQ WK WV WO bq bk bv bo w X HX; unfold torch_head, biased_attn.
  set (q := query X); set (K := exp (kappa d r rho WQ bq bk q)).
  set (W := W_nf r rho WQ WK); set (c := c_nf r rho WK bq); set (v := v_nf dv dout WV WO w).
  set (b := b_nf dv dout WO bv bo w).
  rewrite (map_ext _ (fun x => K * (exp (bil d x W q + dot d x c) * dot d v x)
                               + (K * b) * exp (bil d x W q + dot d x c)))
    by (intros; rewrite score_normal_form, value_normal_form, exp_plus; unfold K, W, c, v, b; ring).
  rewrite (map_ext (fun x => exp (torch_score d r rho WQ WK bq bk q x))
                   (fun x => K * exp (bil d x W q + dot d x c)))
    by (intros; rewrite score_normal_form, exp_plus; unfold K, W, c; ring).
  rewrite lsum_map_plus, !lsum_map_scal.
  pose proof (lsum_exp_pos (fun x => bil d x W q + dot d x c) X HX) as HB; cbv beta in HB.
  assert (0 < K) by apply exp_pos.
  field; split; lra.
Qed.
